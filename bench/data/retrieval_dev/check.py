"""Checks the retrieval dev set files (bench/data/retrieval_dev/*.json, or the paths given).

Errors (exit 1): a file without the Apache-2.0 license, duplicate turn/question ids, ids not prefixed with their
conversation id, unknown speakers, dates that are not ISO 8601 UTC or do not increase within a conversation,
evidence ids that do not exist or belong to another conversation, unknown categories, multi_turn evidence outside
2-3 turns. Warnings: turns outside 130-170 per conversation, turns outside 8-60 words, fewer than 55 questions per
conversation or 15 per category, a paraphrase question sharing a content word (crude stem) with its evidence, an
inflection question sharing no stem with its evidence, an identifier question with no rare token of its evidence.
Prints counts per conversation and category.  Usage: python3 check.py [FILE.json ...]
"""

import collections
import datetime as dt
import json
import pathlib
import re
import sys

CATEGORIES = [
    "paraphrase",
    "identifier",
    "temporal",
    "multi_turn",
    "stopword_heavy",
    "near_duplicate",
    "inflection",
]
STOP = set(
    """a an the and or but if of to in on at by for with from into onto about over under up down out off
than then so as is are was were be been being am do does did done have has had having it its it's this that these
those there here what which who whom whose when where why how all any some no not nor only own same such too very
can could will would shall should may might must i me my we our you your he him his she her they them their
s t just also again once more most other another each both few many much one ones thing things get got go going
went say said says tell told did make made let us own way there's that's what's isn't wasn't don't doesn't didn't
i'm i'd i'll i've he's she's they're we're you're it'll any anything something""".split()
)


def words(text):
    return re.findall(r"[a-z0-9£][a-z0-9'£.,-]*[a-z0-9]|[a-z0-9]", text.lower())


def stem(w):
    w = w.strip("'.,-").replace("'s", "")
    for suf in (
        "ational",
        "ations",
        "ation",
        "ments",
        "ment",
        "ness",
        "ings",
        "ing",
        "ies",
        "ied",
        "ers",
        "er",
        "ed",
        "es",
        "ly",
        "s",
        "e",
    ):
        if len(w) > len(suf) + 2 and w.endswith(suf):
            w = w[: -len(suf)]
            break
    return w.rstrip("e")[:6]


def content(text):
    return {w.strip("'.,-") for w in words(text) if w.strip("'.,-") not in STOP and len(w.strip("'.,-")) > 1}


def main(paths):
    errors, warns = [], []
    seen_turns, seen_q = {}, set()
    turns_by_conv, convs = {}, {}
    questions = []
    for p in paths:
        doc = json.loads(pathlib.Path(p).read_text())
        if doc.get("license") != "Apache-2.0":
            errors.append(f"{p}: license is {doc.get('license')!r}")
        for c in doc["conversations"]:
            cid = c["id"]
            if cid in convs:
                errors.append(f"duplicate conversation {cid}")
            convs[cid] = c
            turns_by_conv[cid] = c["turns"]
            last = None
            if not 130 <= len(c["turns"]) <= 170:
                warns.append(f"{cid}: {len(c['turns'])} turns (want 130-170)")
            for t in c["turns"]:
                if t["id"] in seen_turns:
                    errors.append(f"duplicate turn id {t['id']}")
                seen_turns[t["id"]] = (cid, t)
                if not t["id"].startswith(cid + "-t"):
                    errors.append(f"{t['id']}: not prefixed {cid}-t")
                if t["speaker"] not in c["speakers"]:
                    errors.append(f"{t['id']}: unknown speaker {t['speaker']}")
                if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", t["date"]):
                    errors.append(f"{t['id']}: date {t['date']} not ISO 8601 UTC")
                d = dt.datetime.fromisoformat(t["date"].replace("Z", "+00:00"))
                if last and d <= last:
                    errors.append(f"{t['id']}: date {t['date']} does not increase")
                last = d
                n = len(t["text"].split())
                if not 8 <= n <= 60:
                    warns.append(f"{t['id']}: {n} words")
        questions += doc["questions"]
    for q in questions:
        qid, cid = q["id"], q["conversation"]
        if qid in seen_q:
            errors.append(f"duplicate question id {qid}")
        seen_q.add(qid)
        if cid not in convs or not qid.startswith(cid + "-q"):
            errors.append(f"{qid}: bad conversation {cid}")
        if q["category"] not in CATEGORIES:
            errors.append(f"{qid}: unknown category {q['category']}")
        ev = q["evidence"]
        if not ev or len(set(ev)) != len(ev):
            errors.append(f"{qid}: empty or repeated evidence")
        if q["category"] == "multi_turn" and not 2 <= len(ev) <= 3:
            errors.append(f"{qid}: multi_turn with {len(ev)} evidence turns")
        if q["category"] != "multi_turn" and len(ev) > 1:
            warns.append(f"{qid}: {q['category']} with {len(ev)} evidence turns")
        if not q["answer"].strip() or not q["question"].strip():
            errors.append(f"{qid}: empty question or answer")
        bad = [e for e in ev if e not in seen_turns or seen_turns[e][0] != cid]
        if bad:
            errors.append(f"{qid}: evidence {bad} missing or in another conversation")
            continue
        texts = [f"{seen_turns[e][1]['speaker']}: {seen_turns[e][1]['text']}" for e in ev]
        qc = content(q["question"])
        ec = set().union(*(content(t) for t in texts))
        _qs, es = {stem(w) for w in qc}, {stem(w) for w in ec}
        if q["category"] == "paraphrase":
            shared = sorted(w for w in qc if stem(w) in es)
            if shared:
                warns.append(f"{qid}: paraphrase shares {shared} with its evidence")
        if q["category"] == "inflection":
            qc & ec
            infl = sorted(w for w in qc - ec if stem(w) in {stem(x) for x in ec - qc})
            if not infl:
                warns.append(f"{qid}: inflection question has no other-form word of its evidence")
        if q["category"] == "identifier":
            rare = []
            for i, tok in enumerate(re.findall(r"[A-Za-z0-9£.,-]+", q["question"])):
                tok = tok.strip(".,-")
                if (
                    re.search(r"\d", tok)
                    or re.search(r"[A-Z]", tok[1:])
                    or "-" in tok
                    or (i > 0 and tok[:1].isupper())
                ) and any(tok.lower() in t.lower() for t in texts):
                    hits = sum(tok.lower() in t["text"].lower() for t in turns_by_conv[cid])
                    if hits <= 4:
                        rare.append(tok)
            if not rare:
                warns.append(f"{qid}: identifier question has no rare code-like token of its evidence")
    for e in errors:
        print("ERROR", e)
    for w in warns:
        print("warn ", w)
    per = collections.defaultdict(collections.Counter)
    for q in questions:
        per[q["conversation"]][q["category"]] += 1
    print(f"\n{'conv':6}{'turns':>6}{'qs':>5} " + " ".join(f"{c[:10]:>10}" for c in CATEGORIES))
    tot = collections.Counter()
    for cid in convs:
        tot.update(per[cid])
        print(
            f"{cid:6}{len(turns_by_conv[cid]):>6}{sum(per[cid].values()):>5} "
            + " ".join(f"{per[cid][c]:>10}" for c in CATEGORIES)
        )
        if sum(per[cid].values()) < 55:
            print(f"warn  {cid}: fewer than 55 questions")
    print(
        f"{'all':6}{sum(len(t) for t in turns_by_conv.values()):>6}{sum(tot.values()):>5} "
        + " ".join(f"{tot[c]:>10}" for c in CATEGORIES)
    )
    low = [c for c in CATEGORIES if tot[c] < 15]
    if low:
        print("warn  categories under 15:", low)
    return 1 if errors else 0


if __name__ == "__main__":
    paths = sys.argv[1:] or sorted(str(p) for p in pathlib.Path(__file__).parent.glob("*.json"))
    sys.exit(main(paths))
