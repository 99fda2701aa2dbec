#!/usr/bin/env python3
"""Generate attnalign's synthetic English-French sample corpus with exact gold alignments.

Deterministic: the same script always writes the same bytes (``python sample_data/make_sample_data.py``
rewrites the files beside it; ``--out DIR`` writes elsewhere). Standard library only.

Sentences are built from a handwritten lexicon of real English and French words and a small grammar.
Each sentence is a sequence of *units*; a unit has its English tokens, its French tokens and its links
(sure "S" or possible "P"), and the French side may order the units differently from the English.
Phenomena covered: adjective-noun reordering (post-nominal French adjectives), gender and number
agreement, elision (l', n', qu', j'), contractions with one-to-many links (of the -> du/des),
``ne ... pas`` negation and do-support, ``est-ce que`` questions, wh-questions with subject-verb
inversion (what does the cat eat ? -> que mange le chat ?), ``there is -> il y a`` (many-to-many,
possible), French articles with no English counterpart (likes cheese -> aime le fromage), partitives
(eats bread -> mange du pain) and ``near -> près de``.

Sure links are the certain ones (content words, determiners, prepositions); possible links mark what
annotators disagree on: do-support, ``ne``, idiom blocks.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

VOWELS = tuple("aeiouhéèêàâôî")

# English, French, gender, French plural (None: +s), English plural (None: +s)
NOUNS = [
    ("cat", "chat", "m", None, None), ("dog", "chien", "m", None, None),
    ("house", "maison", "f", None, None), ("car", "voiture", "f", None, None),
    ("book", "livre", "m", None, None), ("table", "table", "f", None, None),
    ("garden", "jardin", "m", None, None), ("city", "ville", "f", None, "cities"),
    ("tree", "arbre", "m", None, None), ("bird", "oiseau", "m", "oiseaux", None),
    ("child", "enfant", "m", None, "children"), ("man", "homme", "m", None, "men"),
    ("woman", "femme", "f", None, "women"), ("girl", "fille", "f", None, None),
    ("boy", "garçon", "m", None, None), ("door", "porte", "f", None, None),
    ("window", "fenêtre", "f", None, None), ("letter", "lettre", "f", None, None),
    ("apple", "pomme", "f", None, None), ("river", "rivière", "f", None, None),
    ("street", "rue", "f", None, None), ("school", "école", "f", None, None),
    ("friend", "ami", "m", None, None), ("teacher", "professeur", "m", None, None),
    ("doctor", "médecin", "m", None, None), ("horse", "cheval", "m", "chevaux", None),
    ("bottle", "bouteille", "f", None, None), ("chair", "chaise", "f", None, None),
    ("shop", "magasin", "m", None, None), ("train", "train", "m", None, None),
    ("boat", "bateau", "m", "bateaux", None), ("key", "clé", "f", None, None),
    ("newspaper", "journal", "m", "journaux", None), ("flower", "fleur", "f", None, None),
    ("shirt", "chemise", "f", None, None), ("hat", "chapeau", "m", "chapeaux", None),
    ("student", "étudiant", "m", None, None), ("bag", "sac", "m", None, None),
]
PLACES = ["house", "car", "garden", "city", "river", "street", "school", "shop", "train", "boat",
          "table", "chair", "tree", "window", "door", "bag"]
OWNERS = ["man", "woman", "child", "teacher", "doctor", "girl", "boy", "friend", "student"]
# English, French m, French f, French m plural, French f plural, placed before the noun in French
ADJECTIVES = [
    ("red", "rouge", "rouge", "rouges", "rouges", False),
    ("black", "noir", "noire", "noirs", "noires", False),
    ("green", "vert", "verte", "verts", "vertes", False),
    ("white", "blanc", "blanche", "blancs", "blanches", False),
    ("blue", "bleu", "bleue", "bleus", "bleues", False),
    ("happy", "heureux", "heureuse", "heureux", "heureuses", False),
    ("heavy", "lourd", "lourde", "lourds", "lourdes", False),
    ("french", "français", "française", "français", "françaises", False),
    ("small", "petit", "petite", "petits", "petites", True),
    ("big", "grand", "grande", "grands", "grandes", True),
    ("pretty", "joli", "jolie", "jolis", "jolies", True),
    ("good", "bon", "bonne", "bons", "bonnes", True),
    ("young", "jeune", "jeune", "jeunes", "jeunes", True),
]
# English base, English 3sg, French forms for je, il/elle, nous, vous, ils/elles
VERBS = [
    ("see", "sees", ("vois", "voit", "voyons", "voyez", "voient")),
    ("like", "likes", ("aime", "aime", "aimons", "aimez", "aiment")),
    ("take", "takes", ("prends", "prend", "prenons", "prenez", "prennent")),
    ("buy", "buys", ("achète", "achète", "achetons", "achetez", "achètent")),
    ("want", "wants", ("veux", "veut", "voulons", "voulez", "veulent")),
    ("find", "finds", ("trouve", "trouve", "trouvons", "trouvez", "trouvent")),
    ("open", "opens", ("ouvre", "ouvre", "ouvrons", "ouvrez", "ouvrent")),
    ("close", "closes", ("ferme", "ferme", "fermons", "fermez", "ferment")),
    ("sell", "sells", ("vends", "vend", "vendons", "vendez", "vendent")),
    ("watch", "watches", ("regarde", "regarde", "regardons", "regardez", "regardent")),
    ("wash", "washes", ("lave", "lave", "lavons", "lavez", "lavent")),
    ("carry", "carries", ("porte", "porte", "portons", "portez", "portent")),
]
INTRANSITIVE = [
    ("sleep", "sleeps", ("dors", "dort", "dormons", "dormez", "dorment")),
    ("work", "works", ("travaille", "travaille", "travaillons", "travaillez", "travaillent")),
    ("run", "runs", ("cours", "court", "courons", "courez", "courent")),
    ("sing", "sings", ("chante", "chante", "chantons", "chantez", "chantent")),
    ("eat", "eats", ("mange", "mange", "mangeons", "mangez", "mangent")),
]
MASS = [("bread", "pain", "m"), ("cheese", "fromage", "m"), ("water", "eau", "f"),
        ("wine", "vin", "m"), ("milk", "lait", "m"), ("coffee", "café", "m")]
MASS_VERBS = [
    ("eat", "eats", ("mange", "mange", "mangeons", "mangez", "mangent")),
    ("drink", "drinks", ("bois", "boit", "buvons", "buvez", "boivent")),
    ("buy", "buys", ("achète", "achète", "achetons", "achetez", "achètent")),
]
NAMES = [("John", "Jean"), ("Mary", "Marie"), ("Peter", "Pierre"), ("Paul", "Paul"),
         ("Anne", "Anne"), ("Louis", "Louis")]
PREPOSITIONS = [("in", ["dans"]), ("on", ["sur"]), ("under", ["sous"]), ("with", ["avec"]),
                ("behind", ["derrière"]), ("near", ["près", "de"])]
# English pronoun, French pronoun, person index into the verb forms, English verb is 3sg
PRONOUNS = [("i", "je", 0, False), ("he", "il", 1, True), ("she", "elle", 1, True),
            ("we", "nous", 2, False), ("you", "vous", 3, False), ("they", "ils", 4, False)]


class Unit:
    """English tokens, French tokens and links (i, j, 'S'|'P') local to the unit."""

    def __init__(self, en: list[str], fr: list[str], links: list[tuple[int, int, str]]):
        self.en, self.fr, self.links = en, fr, links


def one_to_one(en: list[str], fr: list[str]) -> Unit:
    return Unit(en, fr, [(k, k, "S") for k in range(len(en))])


def block(en: list[str], fr: list[str], label: str = "P") -> Unit:
    return Unit(en, fr, [(i, j, label) for i in range(len(en)) for j in range(len(fr))])


class Grammar:
    def __init__(self, rng: random.Random):
        self.r = rng

    def noun_phrase(self, plural: bool | None = None, nouns=None, definite_only=False) -> tuple:
        """A determiner + (adjective) + noun phrase; returns (unit, French gender, plural)."""
        r = self.r
        en_n, fr_n, g, fr_pl, en_pl = r.choice(nouns or NOUNS)
        plural = r.random() < 0.3 if plural is None else plural
        en_noun = (en_pl or en_n + "s") if plural else en_n
        fr_noun = (fr_pl or fr_n + "s") if plural else fr_n
        adj = r.choice(ADJECTIVES) if r.random() < 0.4 else None
        fr_adj = None
        if adj:
            fr_adj = adj[1 + (2 if plural else 0) + (g == "f")]
        det_kind = "the" if definite_only else r.choice(["the", "the", "a", "my", "this"])
        if plural and det_kind == "a":
            det_kind = "some"
        en_det = {"the": "the", "a": "a", "my": "my", "this": "this", "some": "some"}[det_kind]
        if plural and det_kind == "this":
            en_det = "these"
        first_fr = fr_adj if (adj and adj[5]) else fr_noun
        vowel = first_fr.startswith(VOWELS)
        if plural:
            fr_det = {"the": "les", "some": "des", "my": "mes", "this": "ces"}[det_kind]
        elif det_kind == "the":
            fr_det = "l'" if vowel else ("la" if g == "f" else "le")
        elif det_kind == "a":
            fr_det = "une" if g == "f" else "un"
        elif det_kind == "my":
            fr_det = "mon" if (g == "m" or vowel) else "ma"
        else:
            fr_det = "cette" if g == "f" else ("cet" if vowel else "ce")
        en = [en_det] + ([adj[0]] if adj else []) + [en_noun]
        if adj and adj[5]:
            fr = [fr_det, fr_adj, fr_noun]
            links = [(0, 0, "S"), (1, 1, "S"), (2, 2, "S")]
        elif adj:
            fr = [fr_det, fr_noun, fr_adj]
            links = [(0, 0, "S"), (1, 2, "S"), (2, 1, "S")]
        else:
            fr = [fr_det, fr_noun]
            links = [(0, 0, "S"), (1, 1, "S")]
        return Unit(en, fr, links), g, plural

    def subject(self, allow_pronoun=True) -> tuple[list[Unit], int, bool]:
        """Subject units, French person index, whether the English verb takes -s."""
        r = self.r
        x = r.random()
        if allow_pronoun and x < 0.3:
            en, fr, person, third = r.choice(PRONOUNS)
            return [one_to_one([en], [fr])], person, third
        if x < 0.42:
            en, fr = r.choice(NAMES)
            return [one_to_one([en], [fr])], 1, True
        if x < 0.55:
            return self.genitive(), 1, True
        np, _, plural = self.noun_phrase()
        return [np], 4 if plural else 1, not plural

    def genitive(self) -> list[Unit]:
        """'the N of the N2' -> 'le N de le N2', contracted to du/des (one-to-many links)."""
        head, _, _ = self.noun_phrase(plural=False, definite_only=True)
        owner, g, plural = self.noun_phrase(nouns=[n for n in NOUNS if n[0] in OWNERS],
                                            definite_only=True)
        fr_det = owner.fr[0]
        if fr_det in ("le", "les"):  # de + le -> du, de + les -> des: both English words link to it
            contracted = "du" if fr_det == "le" else "des"
            en = ["of"] + owner.en
            fr = [contracted] + owner.fr[1:]
            links = [(0, 0, "S"), (1, 0, "S")] + [(i + 1, j, s) for i, j, s in owner.links if i > 0]
            return [head, Unit(en, fr, links)]
        return [head, one_to_one(["of"], ["de"]), owner]

    def verb(self, verbs, person, third, negated) -> list[Unit]:
        r = self.r
        base, s3, forms = r.choice(verbs)
        fr_v = forms[person]
        if not negated:
            return [one_to_one([s3 if third else base], [fr_v])]
        do = "does" if third else "do"
        # do + not + V -> ne V pas: not~pas sure, not~ne possible, do~V possible
        return [Unit([do, "not", base], ["ne", fr_v, "pas"],
                     [(1, 2, "S"), (1, 0, "P"), (0, 1, "P"), (2, 1, "S")])]

    def obj(self, verbs) -> tuple[list, list[Unit]]:
        r = self.r
        if verbs is MASS_VERBS or r.random() < 0.15:
            en_m, fr_m, g = r.choice(MASS)
            if verbs is MASS_VERBS:  # partitive: eats bread -> mange du pain (du has no counterpart)
                art = "de l'" if fr_m.startswith(VOWELS) else ("du" if g == "m" else "de la")
                fr = art.split() + [fr_m]
            else:  # generic: likes cheese -> aime le fromage (le has no counterpart)
                art = "l'" if fr_m.startswith(VOWELS) else ("le" if g == "m" else "la")
                fr = [art, fr_m]
            return [], [Unit([en_m], fr, [(0, len(fr) - 1, "S")])]
        np, _, _ = self.noun_phrase()
        return [], [np]

    def pp(self) -> list[Unit]:
        prep_en, prep_fr = self.r.choice(PREPOSITIONS)
        np, _, _ = self.noun_phrase(nouns=[n for n in NOUNS if n[0] in PLACES])
        if prep_fr == ["près", "de"] and np.fr[0] in ("le", "les"):
            contracted = "du" if np.fr[0] == "le" else "des"
            links = [(0, 0, "S"), (0, 1, "S"), (1, 1, "S")] + [
                (i + 1, j + 1, s) for i, j, s in np.links if i > 0
            ]
            return [Unit([prep_en] + np.en, ["près", contracted] + np.fr[1:], links)]
        return [Unit([prep_en], prep_fr, [(0, k, "S") for k in range(len(prep_fr))]), np]

    def sentence(self) -> tuple[list[Unit], list[int]]:
        """Units in English order and the French order of the units."""
        r = self.r
        kind = r.choices(["decl", "neg", "yesno", "wh", "where", "there", "mass"],
                         weights=[30, 14, 10, 9, 7, 8, 10])[0]
        if kind in ("decl", "neg", "mass"):
            subj, person, third = self.subject()
            verbs = MASS_VERBS if kind == "mass" else VERBS
            units = subj + self.verb(verbs, person, third, kind == "neg")
            units += self.obj(verbs)[1]
            if r.random() < 0.3:
                units += self.pp()
            units.append(one_to_one(["."], ["."]))
            return units, list(range(len(units)))
        if kind == "yesno":
            subj, person, third = self.subject()
            base, _, forms = r.choice(VERBS)
            units = [block(["does" if third else "do"], ["est-ce", "que"])] + subj
            units += [one_to_one([base], [forms[person]])] + self.obj(VERBS)[1]
            units.append(one_to_one(["?"], ["?"]))
            return units, list(range(len(units)))
        if kind in ("wh", "where"):
            np, _, plural = self.noun_phrase()
            third = not plural
            if kind == "wh":
                base, _, forms = r.choice(VERBS + MASS_VERBS[:2])
                wh = one_to_one(["what"], ["que"])
            else:
                base, _, forms = r.choice(INTRANSITIVE)
                wh = one_to_one(["where"], ["où"])
            # what does the cat eat ? -> que mange le chat ? (verb before the subject in French)
            do = Unit(["does" if third else "do"], [], [])
            v = Unit([base], [forms[4 if plural else 1]], [(0, 0, "S")])
            units = [wh, do, np, v, one_to_one(["?"], ["?"])]
            fr_order = [0, 1, 3, 2, 4]
            # do-support links possibly to the French verb: handled after placement
            return units, fr_order
        # there is / are -> il y a: a many-to-many block, all possible
        np, _, plural = self.noun_phrase(definite_only=False)
        units = [block(["there", "are" if plural else "is"], ["il", "y", "a"]), np] + self.pp()
        units.append(one_to_one(["."], ["."]))
        return units, list(range(len(units)))


ELISIONS = {"le": "l'", "la": "l'", "je": "j'", "ne": "n'", "que": "qu'", "de": "d'"}


def elide(fr: list[str]) -> list[str]:
    """French elision before a vowel or mute h: le arbre -> l' arbre, je aime -> j' aime."""
    return [
        ELISIONS[w] if w in ELISIONS and k + 1 < len(fr) and fr[k + 1].startswith(VOWELS) else w
        for k, w in enumerate(fr)
    ]


def realize(units: list[Unit], fr_order: list[int]) -> tuple[list[str], list[str], list[tuple]]:
    """Concatenate units; return English tokens, French tokens and global links (i, j, label)."""
    en_off, fr_off, en, fr = [], {}, [], []
    for u in units:
        en_off.append(len(en))
        en += u.en
    for k in fr_order:
        fr_off[k] = len(fr)
        fr += units[k].fr
    links = {(en_off[k] + i, fr_off[k] + j): s for k, u in enumerate(units) for i, j, s in u.links}
    # do-support in wh-questions: 'does' possibly aligned to the French verb
    for k, u in enumerate(units):
        if u.en in (["does"], ["do"]) and not u.fr and k + 2 < len(units):
            links[(en_off[k], fr_off[k + 2])] = "P"
    return en, elide(fr), sorted((i, j, s) for (i, j), s in links.items())


def generate(n: int, seed: int) -> list[tuple[list[str], list[str], list[tuple]]]:
    g = Grammar(random.Random(seed))
    return [realize(*g.sentence()) for _ in range(n)]


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    splits = {"train": generate(5000, 1), "dev": generate(100, 2), "test": generate(200, 3)}
    for name, data in splits.items():
        (out / f"{name}.en").write_text("".join(" ".join(e) + "\n" for e, _, _ in data))
        (out / f"{name}.fr").write_text("".join(" ".join(f) + "\n" for _, f, _ in data))
        if name == "train":
            continue
        pharaoh = "".join(
            " ".join(f"{i}{'-' if s == 'S' else 'p'}{j}" for i, j, s in links) + "\n"
            for _, _, links in data
        )
        (out / f"{name}.gold.pharaoh").write_text(pharaoh)
    naacl = "".join(
        f"{k:04d} {i + 1} {j + 1} {s}\n"
        for k, (_, _, links) in enumerate(splits["test"], start=1)
        for i, j, s in links
    )
    (out / "test.gold.naacl").write_text(naacl)
    # A naive baseline to score: each French word linked to the English word at the same relative
    # position (the diagonal).
    diag = []
    for e, f, _ in splits["test"]:
        diag.append(" ".join(f"{min(len(e) - 1, round(j * len(e) / len(f)))}-{j}"
                             for j in range(len(f))))
    (out / "test.diagonal.align").write_text("".join(line + "\n" for line in diag))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    write(ap.parse_args().out)
