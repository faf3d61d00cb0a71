"""Validate retrieval dev set files (default: every *.json beside this script).

    python3 bench/data/retrieval_dev/check_part_a.py [FILE.json ...]

Errors (exit 1): duplicate ids, missing/foreign evidence, non-increasing dates, unknown categories,
multi_turn evidence not 2-3 turns, missing fields. Warnings: turns outside 8-60 words, conversations outside
130-170 turns, fewer than 55 questions per conversation, paraphrase questions sharing a content word with
their evidence (crude stemming). Prints counts per conversation and category.
"""
import collections, json, pathlib, re, sys

CATEGORIES = ("paraphrase", "identifier", "temporal", "multi_turn", "stopword_heavy", "near_duplicate", "inflection")
STOP = set("""a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of
off on once only or other our ours ourselves out over own same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we were what when where
which while who whom why will with would you your yours yourself yourselves get got go going went one ones thing
things said say says do also let lets yes yeah oh ok okay still well back really much many like s t don didn
whats its thats im were theyre hes shes theres""".split())


def stem(w):
    for suf in ("ings", "ing", "ers", "er", "ies", "ied", "ed", "es", "s", "ly"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w


def content(text):
    words = re.findall(r"[a-z0-9]+", text.lower().replace("'", "").replace("\u2019", ""))
    return {stem(w) for w in words if w not in STOP}


def main(paths):
    errors, warnings = [], []
    convs, questions = {}, []
    for p in paths:
        data = json.loads(pathlib.Path(p).read_text())
        if data.get("license") != "Apache-2.0":
            errors.append(f"{p}: license is not Apache-2.0")
        for c in data["conversations"]:
            if c["id"] in convs:
                errors.append(f"duplicate conversation id {c['id']}")
            convs[c["id"]] = c
        questions.extend(data["questions"])
    turns, ids = {}, set()
    for cid, c in convs.items():
        prev = None
        if not 130 <= len(c["turns"]) <= 170:
            warnings.append(f"{cid}: {len(c['turns'])} turns (want 130-170)")
        for t in c["turns"]:
            for k in ("id", "speaker", "date", "text"):
                if k not in t:
                    errors.append(f"{cid}: turn without {k}: {t}")
            if t["id"] in ids:
                errors.append(f"duplicate id {t['id']}")
            ids.add(t["id"])
            if not t["id"].startswith(cid + "-"):
                errors.append(f"{t['id']}: not prefixed with {cid}")
            if t["speaker"] not in c["speakers"]:
                errors.append(f"{t['id']}: speaker {t['speaker']} not in {c['speakers']}")
            if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", t["date"]):
                errors.append(f"{t['id']}: date {t['date']} is not ISO 8601 UTC")
            if prev is not None and t["date"] <= prev:
                errors.append(f"{t['id']}: date {t['date']} does not increase")
            prev = t["date"]
            n = len(t["text"].split())
            if not 8 <= n <= 60:
                warnings.append(f"{t['id']}: {n} words: {t['text']}")
            turns[t["id"]] = (cid, t)
    per_conv = collections.Counter()
    per_cat = collections.Counter()
    table = collections.Counter()
    for q in questions:
        for k in ("id", "conversation", "question", "answer", "evidence", "category"):
            if k not in q:
                errors.append(f"question without {k}: {q}")
        if q["id"] in ids:
            errors.append(f"duplicate id {q['id']}")
        ids.add(q["id"])
        if q["conversation"] not in convs:
            errors.append(f"{q['id']}: unknown conversation {q['conversation']}")
        if not q["id"].startswith(q["conversation"] + "-"):
            errors.append(f"{q['id']}: not prefixed with {q['conversation']}")
        if q["category"] not in CATEGORIES:
            errors.append(f"{q['id']}: unknown category {q['category']}")
        if not q["evidence"] or len(set(q["evidence"])) != len(q["evidence"]):
            errors.append(f"{q['id']}: empty or repeated evidence")
        for e in q["evidence"]:
            if e not in turns:
                errors.append(f"{q['id']}: evidence {e} does not exist")
            elif turns[e][0] != q["conversation"]:
                errors.append(f"{q['id']}: evidence {e} is in another conversation")
        if q["category"] == "multi_turn" and not 2 <= len(q["evidence"]) <= 3:
            errors.append(f"{q['id']}: multi_turn needs 2-3 evidence turns")
        if q["category"] == "paraphrase":
            ev = set().union(*(content(turns[e][1]["text"]) for e in q["evidence"] if e in turns))
            shared = content(q["question"]) & ev
            if shared:
                warnings.append(f"{q['id']}: paraphrase shares {sorted(shared)}")
        per_conv[q["conversation"]] += 1
        per_cat[q["category"]] += 1
        table[q["conversation"], q["category"]] += 1
    for cid in convs:
        if per_conv[cid] < 55:
            warnings.append(f"{cid}: {per_conv[cid]} questions (want >= 55)")
    print("conv  turns  questions  " + "  ".join(c[:10].rjust(10) for c in CATEGORIES))
    for cid, c in convs.items():
        print(f"{cid:5} {len(c['turns']):5}  {per_conv[cid]:9}  "
              + "  ".join(str(table[cid, cat]).rjust(10) for cat in CATEGORIES))
    print(f"all   {len(turns):5}  {len(questions):9}  " + "  ".join(str(per_cat[c]).rjust(10) for c in CATEGORIES))
    for w in warnings:
        print("warning:", w)
    for e in errors:
        print("ERROR:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    here = pathlib.Path(__file__).resolve().parent
    sys.exit(main(sys.argv[1:] or sorted(str(p) for p in here.glob("*.json"))))
