#!/usr/bin/env python3
"""The experiment's report: results.json, results.md and report.html from a run directory.

    data/experiment_report.py RUN [--settings JSON] [--seconds S] [--against OTHER_RUN]
    data/experiment_report.py --view ANALYSIS.json --out VIEW.html    (one gen --analyze file)

Every number comes from the C programs: pass@k per task and overall from `gen --eval
--summary`, training curves from `train`'s JSON-lines logs, the confidence analysis from
`gen --analyze`. This script only gathers them, states their spread (the standard
deviation over seeds; with one seed, a 95% bootstrap interval over test tasks) and draws
them. Standard library only; the HTML needs no network and no other file.

--against OTHER_RUN adds this run's rows against another run's (the experiment passes the
run a SET run reused): for each row scored with other settings there, the paired difference
over test tasks. Without --settings, the settings come from RUN's results.json, so a report
can be made again by hand.
"""
import argparse
import collections
import fractions
import html
import json
import math
import os
import random
import re
import statistics
import sys

# (row, label, how it is trained); the paper's Table 2, then Table 5's partial ablations
ROWS = [
    ("vanilla", "Vanilla (base model)", "no fine-tuning"),
    ("sft", "SFT", "--objective sft"),
    ("dft", "DFT", "--objective dft"),
    ("profit", "ProFit", "--objective profit"),
    ("eaft", "EAFT", "--objective eaft"),
    ("asft", "ASFT", "--objective asft"),
    ("cuset", "CuSeT", "--objective cuset"),
    ("cuset_conf_cuda", "CuSeT: confidence + CUDA mask", "--objective cuset --no-reweight"),
    ("cuset_conf_rew", "CuSeT: confidence mask + reweighting", "--objective cuset --no-cuda-mask"),
]
TABLE2 = ["vanilla", "sft", "dft", "profit", "eaft", "asft", "cuset"]
# Table 5: confidence mask only is exactly ProFit (METHOD.md)
TABLE5 = [("profit", "yes", "", ""), ("cuset_conf_cuda", "yes", "yes", ""), ("cuset_conf_rew", "yes", "", "yes"),
          ("cuset", "yes", "yes", "yes")]
METRICS = [("compile", "1"), ("compile", "3"), ("functional", "1"), ("functional", "3")]
LABEL = {r: l for r, l, _ in ROWS}
SHORT = {"vanilla": "Vanilla", "cuset_conf_cuda": "conf + CUDA", "cuset_conf_rew": "conf + rew"}
# each fine-tuned row's line in the training charts: a pattern of its own, so that a line under
# another shows through its gaps
DASHES = {"sft": "", "dft": "7 3", "profit": "2 3", "eaft": "9 3 2 3", "asft": "4 4", "cuset": "",
          "cuset_conf_cuda": "7 2 2 2 2 2", "cuset_conf_rew": "1 2"}
COLORS = {"vanilla": "#888888", "sft": "#1f77b4", "dft": "#ff7f0e", "profit": "#2ca02c", "eaft": "#9467bd",
          "asft": "#8c564b", "cuset": "#d62728", "cuset_conf_cuda": "#e377c2", "cuset_conf_rew": "#17becf"}


def load_json(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        try:
            return json.load(f)
        except ValueError as e:
            sys.exit("experiment_report: %s is not valid JSON (%s): cut short? Remove it (and %s.key beside it, if "
                     "any) and rerun make experiment with the same settings to make it again" % (path, e, path))


def load_log(path):
    """train's JSON-lines log: the step lines (validation lines are left out)."""
    steps = []
    if not os.path.exists(path):
        return steps
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                d = json.loads(line)
                if "step" in d and "loss" in d:
                    steps.append(d)
    return steps


def bootstrap(values, reps=2000, seed=12345):
    """95% percentile interval of the mean of values, resampling them with replacement."""
    if not values:
        return (0.0, 0.0)
    rng = random.Random(seed)
    n = len(values)
    # rounded to 1e-12, so that a resample whose differences cancel has a mean of 0, not
    # float noise that reads as a sign (the values are rates: their grid is far coarser)
    means = sorted(round(sum(values[rng.randrange(n)] for _ in range(n)) / n, 12) for _ in range(reps))
    return (means[int(0.025 * reps)], means[int(0.975 * reps) - 1])


def spread(per_seed, per_task):
    """mean over seeds and its spread: std over seeds, or a bootstrap interval over tasks."""
    mean = statistics.fmean(per_seed)
    if len(per_seed) > 1:
        return {"mean": mean, "std": statistics.stdev(per_seed), "kind": "std over seeds"}
    lo, hi = bootstrap(per_task)
    return {"mean": mean, "lo": lo, "hi": hi, "kind": "95% bootstrap interval over tasks"}


def fmt(s, scale=100.0):
    if "std" in s:
        return "%.1f ± %.1f" % (scale * s["mean"], scale * s["std"])
    return "%.1f [%.1f, %.1f]" % (scale * s["mean"], scale * s["lo"], scale * s["hi"])


def paired(a, b):
    """row a against row b on the tasks both were scored on: the mean difference of the
    per-task values (dicts task -> value), its 95% bootstrap interval over tasks (resampling
    tasks keeps each task's pair together), and the tasks where a is higher / lower / equal."""
    tasks = sorted(set(a) & set(b))
    d = [a[t] - b[t] for t in tasks]
    lo, hi = bootstrap(d)
    return {"tasks": len(d), "mean": statistics.fmean(d) if d else 0.0, "lo": lo, "hi": hi,
            "higher": sum(x > 0 for x in d), "lower": sum(x < 0 for x in d), "equal": sum(x == 0 for x in d)}


def untrained(r):
    """what a row's training logs say about steps that trained nothing: '' when none did"""
    z = r.get("zero_gradient") or {}
    if not z.get("steps"):
        return ""
    return "trained nothing: gradient 0" if z["steps"] == z["of"] else "gradient 0 at %d of %d steps" % (z["steps"], z["of"])


def label(res, row, short=False):
    """a row's name in the tables, marked when its training logged a gradient of 0"""
    name = SHORT.get(row, res[row]["label"]) if short else res[row]["label"]
    flag = untrained(res[row])
    return "%s (%s)" % (name, "gradient 0" if short else flag) if flag else name


def paired_cells(p, who):
    """a paired comparison (paired()) as table cells: the difference and its interval in
    points, the reading ("WHO higher", "WHO lower" or no difference), tasks higher / lower / equal"""
    reads = "%s higher" % who if p["lo"] > 0 else "%s lower" % who if p["hi"] < 0 else "no difference shown"
    return "%+.1f | [%+.1f, %+.1f] | %s | %d / %d / %d" % (100 * p["mean"], 100 * p["lo"], 100 * p["hi"], reads,
                                                         p["higher"], p["lower"], p["equal"])


# data/corpus --compare's line for an output file of another size than the task's: the
# bytes written, the bytes and the elements expected
WRONG_SIZE = re.compile(r"^FAIL \S+: \S+\.bin has (\d+) bytes, expected (\d+) \((\d+) x \w+\)")
# the corpus programs' own message when an input file is missing or shorter than they read
UNREADABLE = re.compile(r"\bcannot read \S+\.bin\b")
# the outcomes counted from the programs' details, within wrong answers and crashes
DETAILS = ("wrong_size", "unreadable_input")


def count_details(path):
    """of a gen --eval results file: the wrong answers with an output of another size, and
    the crashes on an input that could not be read (a wrong file name, or a size larger
    than the task's); and of the outputs of another size, how many of each pair (elements
    the task asks, elements written)"""
    n, sizes = dict.fromkeys(DETAILS, 0), collections.Counter()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            r = json.loads(line) if line.strip() else {}
            detail = r.get("detail", "")
            m = WRONG_SIZE.match(detail) if r.get("status") == "wrong_answer" else None
            if m:
                n["wrong_size"] += 1
                got, want, elements = (int(g) for g in m.groups())
                sizes[(elements, got * elements / want)] += 1
            n["unreadable_input"] += r.get("status") == "crash" and UNREADABLE.search(detail) is not None
    return n, sizes


def programs(outcomes):
    """how many programs the outcomes count (DETAILS are parts of other outcomes)"""
    return sum(v for k, v in outcomes.items() if k not in DETAILS) or 1


def gather(run, seeds):
    """results per row: metrics (overall, seen, held-out, per family), and the curves and analysis of seeds[0]'s models."""
    out = {}
    for row, label, how in ROWS:
        paths = [p for p in (os.path.join(run, "seed%s" % s, row + ".eval.json") for s in seeds) if os.path.exists(p)]
        evals = [load_json(p) for p in paths]
        if not evals:
            continue
        r = {"label": label, "trained_with": how, "seeds": len(evals), "metrics": {}}
        for part in ("all", "seen", "heldout"):
            r["metrics"][part] = {}
            for kind, k in METRICS:
                per_seed = [e[part][kind][k] for e in evals]
                tasks = [t for t in evals[0]["per_task"] if part == "all" or t["heldout"] == (part == "heldout")]
                per_task = [t["result"][kind][k] for t in tasks if t["result"][kind][k] is not None]
                r["metrics"][part]["%s@%s" % (kind, k)] = spread(per_seed, per_task)
            r["metrics"][part]["tasks"] = evals[0][part]["tasks"]
        # each task's functional pass@1 averaged over the seeds, and each seed's overall one:
        # for the paired comparison with CuSeT. Exact, from the counts (passed / n): the
        # files' six decimals made equal rates differ (1/3 + 1 + 1/3 and 2/3 + 2/3 + 1/3 by
        # 3e-7), which counted a tie as a loss and could put an interval's end below 0
        per_task = {}
        for e in evals:
            for t in e["per_task"]:
                if t["result"]["functional"]["1"] is not None:
                    per_task.setdefault(t["id"], []).append(fractions.Fraction(t["passed"], t["n"]))
        r["task_functional@1"] = {t: float(sum(v) / len(v)) for t, v in per_task.items()}
        r["seed_functional@1"] = [e["all"]["functional"]["1"] for e in evals]
        fams = sorted(evals[0]["families"])
        r["families"] = {f: statistics.fmean(e["families"][f]["functional"]["1"] for e in evals) for f in fams}
        # what became of the sampled programs, over the seeds
        r["outcomes"] = {k: sum(e["outcomes"][k] for e in evals) for k in evals[0]["outcomes"]}
        if all(os.path.exists(p + "l") for p in paths):  # the programs' results: ROW.eval.jsonl
            counts, sizes = zip(*(count_details(p + "l") for p in paths))
            r["outcomes"].update({k: sum(c[k] for c in counts) for k in DETAILS})
            # per size asked: [elements asked, programs, [[elements written, programs], ...]], the most
            # frequent first
            asked = {}
            for (a, w), c in sorted(sum(sizes, collections.Counter()).items(), key=lambda x: (-x[1], x[0][1])):
                asked.setdefault(a, []).append([w, c])
            r["wrong_sizes"] = sorted(([a, sum(c for _, c in ws), ws] for a, ws in asked.items()),
                                      key=lambda x: (-x[1], -x[0]))
        ckpt = os.path.join(run, "base.ckpt" if row == "vanilla" else os.path.join("seed%s" % seeds[0], row + ".ckpt"))
        r["curve"] = [{k: d[k] for k in ("step", "loss", "ce", "conf", "pass", "w") if k in d}
                      for d in load_log(ckpt + ".jsonl")]
        # the steps whose gradient was 0 (train's note "step N trained nothing (gradient 0)"; its
        # log's grad_norm), over every seed's training: such a step left the model as it was
        logs = [load_log(ckpt + ".jsonl")] if row == "vanilla" else \
            [load_log(os.path.join(run, "seed%s" % s, row + ".ckpt.jsonl")) for s in seeds]
        logged = [d for log in logs for d in log if "grad_norm" in d]
        r["zero_gradient"] = {"steps": sum(d["grad_norm"] == 0 for d in logged), "of": len(logged)}
        ap = os.path.join(run, "base.analysis.json" if row == "vanilla" else
                          os.path.join("seed%s" % seeds[0], row + ".analysis.json"))
        r["analysis"] = load_json(ap) if os.path.exists(ap) else None
        out[row] = r
    if "cuset" in out:  # CuSeT against every other row, task by task
        out["cuset"]["paired"] = {row: paired(out["cuset"]["task_functional@1"], r["task_functional@1"])
                                  for row, r in out.items() if row != "cuset"}
    return out


def against(run, res, other, seeds):
    """this run's rows against OTHER's, over the seeds both runs have: for each row whose
    scoring there had other settings (another evaluation key), functional pass@1 of this run
    minus that run's, paired over the test tasks both scored; rows scored the same in both
    are listed apart. None when the runs have no seed in common."""
    both = [s for s in seeds if os.path.isdir(os.path.join(other, "seed%s" % s))]
    if not both:
        return None
    if both != seeds:
        res, seeds = gather(run, both), both
    theirs = gather(other, seeds)

    def keys(r, row):  # the settings each seed's scoring of row was made with (None: unknown)
        ks = []
        for s in seeds:
            p = os.path.join(r, "seed%s" % s, row + ".eval.json.key")
            if os.path.exists(p):
                with open(p, encoding="utf-8") as f:
                    ks.append(f.read())
            else:
                ks.append(None)
        return ks

    rows, same = {}, []
    for row in (r for r in res if r in theirs):
        k = keys(run, row)
        if None not in k and k == keys(other, row):
            same.append(row)
            continue
        a, b = res[row]["task_functional@1"], theirs[row]["task_functional@1"]
        shared = sorted(set(a) & set(b))  # both columns over these, as the difference is: they agree
        rows[row] = dict(paired(a, b), this=statistics.fmean(a[t] for t in shared) if shared else 0.0,
                         that=statistics.fmean(b[t] for t in shared) if shared else 0.0,
                         this_tasks=len(a), that_tasks=len(b))
    p = os.path.join(other, "results.json")
    return {"run": other, "set": load_json(p)["settings"].get("set") if os.path.exists(p) else None,
            "seeds": seeds, "rows": rows, "same": same}


# ---- markdown ---------------------------------------------------------------------------

def markdown(res, settings, seconds, shown_seed, vs=None, missing=()):
    """the report as markdown; shown_seed: the seed whose models' curves and analyses gather read;
    missing: the scorings (row and seed) not found, so the run is unfinished"""
    st = settings
    kind = next(iter(res.values()))["metrics"]["all"]["functional@1"]["kind"]
    L = ["# CuSeT in miniature: results", ""]
    if st.get("preset") == "smoke":  # (README and data/experiment.sh: it checks that every stage runs)
        L += ["> **Smoke run: it measures nothing.** PRESET=smoke checks that every stage runs end to end, in a minute, "
              "with a model of one layer trained for a few steps (%s + %s) and scored on %s tasks; none of its numbers "
              "below (pass rates, confidences, KS tests, gradient shares) is a finding. Run PRESET=cpu or gpu for "
              "results." % (st.get("base_steps"), st.get("ft_steps"), st.get("eval_tasks", st.get("test_tasks"))), ""]
    still = [row for row in res if untrained(res[row])]
    if still:  # rows whose training logged a gradient of 0: at those steps they did not change
        masked = [a["masked"] for a in (res[r]["analysis"] for r in res) if a and a.get("masked")]
        tau = st.get("tau", masked[0]["tau"] if masked else None)
        L += ["> **Rows that did not train**: %s. Their training logs record a gradient of 0 (train's note \"step N "
              "trained nothing (gradient 0)\"): at those steps the row stayed the base model, so its numbers say nothing "
              "about its objective. The usual cause is the confidence mask: no target token's confidence above tau = %s "
              "(a base model that does not yet predict its data)." % (
                  "; ".join("%s (%s)" % (res[r]["label"], untrained(res[r])) for r in still), tau), ""]
    if missing:
        L += ["**Unfinished run**: not scored yet: %s. Its rows are left out or stand on fewer seeds; rerun "
              "`make experiment` with the same settings to finish it." % ", ".join(missing), ""]
    if not st:
        L += ["**Settings unknown**: the run has no results.json (the experiment writes it at its end) and none were "
              "given (--settings).", ""]
    base = "SFT for %s steps" % st.get("base_steps")
    if st.get("base_loss"):  # (runs made before BASE_LOSS existed have none of these)
        base = "SFT until a validation loss of %s: %s of at most %s steps" % (st["base_loss"], st.get("base_trained_steps"),
                                                                               st.get("base_steps"))
    base_val = ", validation loss %.4f" % st["base_val_loss"] if st.get("base_val_loss") is not None else ""
    tasks = next(iter(res.values()))["metrics"]
    split = ("%d with parameter combinations not held out (\"seen\": training may hold them, by chance), %d with "
             "held-out ones" % (tasks["seen"]["tasks"], tasks["heldout"]["tasks"]))
    if st:
        L.append("Preset %s%s; seeds: %s; machine: %s. Base model: %s, %s (training seed %s) on %s tasks%s; every fine-tuned row: "
                 "%s steps from that checkpoint on %s other tasks, same data order, schedule and seed. Scored on the first %s "
                 "test tasks (%s): n = %s programs per task at temperature %s. "
                 "Numbers are percentages; the spread is the %s." %
                 (st.get("preset"), " with %s" % st["set"] if st.get("set") else "", st.get("seeds"), st.get("machine", "?"), st.get("model"), base,
                  st.get("base_seed", 1337), st.get("base_tasks"), base_val, st.get("ft_steps"), st.get("ft_tasks"), st.get("eval_tasks", st.get("test_tasks")),
                  split, st.get("samples"), st.get("temperature"), kind))
        L += ["", method_line(st, res)]
    new = [f for f in st.get("new_families", "").split(",") if f]
    if new:
        L += ["", "New in fine-tuning: %s. The base part leaves these families out, so the base model has never seen "
              "them; the fine-tuning part and the test split have them (marked \"new\" per family)." % ", ".join(new)]
    if seconds:
        L.append("")
        runs = st.get("invocations", 1)
        L.append("Started %s; took %d min%s." % (st.get("started", "?"), round(seconds / 60),
                                                 " over %d invocations (each resumed the run; stages redone after a change of settings count "
                                                 "too)" % runs if runs > 1 else ""))
    L += ["", "## Table 2: objectives", "",
          "| model | compile pass@1 | compile pass@3 | functional pass@1 | functional pass@3 | functional pass@1, seen | functional pass@1, held-out |",
          "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in TABLE2:
        if row in res:
            m = res[row]["metrics"]
            L.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                label(res, row), fmt(m["all"]["compile@1"]), fmt(m["all"]["compile@3"]), fmt(m["all"]["functional@1"]),
                fmt(m["all"]["functional@3"]), fmt(m["seen"]["functional@1"]), fmt(m["heldout"]["functional@1"])))
    L += ["", "## Table 5: CuSeT's parts", "",
          "| model | confidence mask | CUDA mask | reweighting | compile pass@1 | functional pass@1 | functional pass@3 |",
          "| --- | --- | --- | --- | --- | --- | --- |"]
    for row, a, b, c in TABLE5:
        if row in res:
            m = res[row]["metrics"]["all"]
            L.append("| %s | %s | %s | %s | %s | %s | %s |" % (label(res, row), a or "-", b or "-", c or "-", fmt(m["compile@1"]),
                                                               fmt(m["functional@1"]), fmt(m["functional@3"])))
    if "cuset" in res:
        seeds = res["cuset"]["seeds"]
        L += ["", "## CuSeT against each row, paired over test tasks", "",
              "Functional pass@1 of CuSeT minus the row's, in points, on the same test tasks (a task's pass@1 averaged "
              "over the seeds first). The interval is a 95%% bootstrap over tasks: it covers which tasks were drawn, "
              "not the spread from seed to seed%s." % (" (the last column: the difference of each seed's overall "
                                                       "pass@1)" if seeds > 1 else ", which needs several seeds"), "",
              "| CuSeT against | difference | 95% interval | reads | tasks CuSeT higher / lower / equal |" +
              (" per seed |" if seeds > 1 else ""),
              "| --- | --- | --- | --- | --- |" + (" --- |" if seeds > 1 else "")]
        for row, p in res["cuset"]["paired"].items():
            per_seed = " / ".join("%+.1f" % (100 * (c - o)) for c, o in zip(res["cuset"]["seed_functional@1"],
                                                                          res[row]["seed_functional@1"]))
            L.append("| %s | %s |%s" % (label(res, row), paired_cells(p, "CuSeT"), " %s |" % per_seed if seeds > 1 else ""))
    if vs:
        what = "SET \"%s\"" % vs["set"] if vs["set"] else "the preset's settings" if vs["set"] == "" else "settings unknown"
        same = ("Scored with the same settings in both, so left out: %s." % ", ".join(LABEL[r] for r in vs["same"])
                if vs["same"] else "")
        L += ["", "## This run against %s (%s; seeds %s)" % (vs["run"], what, ",".join(vs["seeds"])), ""]
        if not vs["rows"]:
            L.append("No row scored in both runs was scored with other settings there. " + same)
        else:
            counts = {}  # (shared, this run's, that run's) -> the rows with those task counts
            for row, p in vs["rows"].items():
                counts.setdefault((p["tasks"], p.get("this_tasks", p["tasks"]), p.get("that_tasks", p["tasks"])), []).append(row)
            says = lambda c: "all %d" % c[0] if c[1:] == (c[0], c[0]) else "%d of this run's %d and that run's %d" % c
            shared = says(next(iter(counts))) if len(counts) == 1 else "; ".join(
                "%s: %s" % (", ".join(SHORT.get(r, LABEL[r]) for r in rows), says(c)) for c, rows in counts.items())
            L += ["Functional pass@1 of this run and of that run, and this run's minus that run's, in points, all three "
                  "over the test tasks both runs scored (%s; a task's pass@1 averaged over the seeds first), with a 95%% "
                  "bootstrap interval over tasks, for the rows scored with other settings there. %s" % (shared, same), "",
                  "| row | this run, shared tasks | that run, shared tasks | difference | 95% interval | reads | "
                  "tasks higher / lower / equal here |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
            for row, p in vs["rows"].items():
                L.append("| %s | %.1f | %.1f | %s |" % (label(res, row), 100 * p["this"], 100 * p["that"],
                                                       paired_cells(p, "this run")))
    fams = sorted({f for r in res.values() for f in r["families"]})
    L += ["", "## Functional pass@1 per family (mean over seeds)", "",
          "| family | " + " | ".join(label(res, r, short=True) for r in res) + " |",
          "| --- |" + " --- |" * len(res)]
    for f in fams:
        L.append("| %s | %s |" % (f + " (new)" * (f in new), " | ".join("%.1f" % (100 * res[r]["families"].get(f, 0)) for r in res)))
    L += ["", "## What became of the sampled programs (all seeds)", "",
          "Shares of the programs sampled for the test tasks. A wrong answer with an output of another size "
          "is one whose output file has another length than the task's (data/corpus --compare's "
          "\"has N bytes, expected M\"): the program wrote a size other than the task's (the corpus's programs copy "
          "their sizes from the prompt). A crash on an unreadable input is the program's own \"cannot read X.bin\": "
          "it read a file under another name than the task's, or more values than the file holds (a size larger "
          "than the task's).", "",
          "| model | programs | pass | compile error | crash | of which an unreadable input | timeout | wrong answer | "
          "of which an output of another size | other |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row, r in res.items():
        o = r["outcomes"]
        n = programs(o)
        share = lambda v: "%.1f%%" % (100 * v / n)
        part = lambda k: share(o[k]) if k in o else "-"
        L.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label(res, row), n, share(o["pass"]), share(o["compile_error"]), share(o["crash"]), part("unreadable_input"),
            share(o["timeout"]), share(o["wrong_answer"]), part("wrong_size"), share(o["unsupported"] + o["error"])))
    L += wrong_size_table(res)
    L += ["", "## Confidence analysis (validation split, teacher-forced; seed %s's models)" % shown_seed, "",
          "| model | mean c, CUDA-sensitive | mean c, neutral | mean c, numbers from the prompt: CUDA-sensitive / neutral "
          "(the numbers' share of all tokens' -log c) | "
          "KS D (p) | samples with a low 64-token window | low windows on CUDA-sensitive spans | mean w_n | "
          "tokens with c <= tau (the confidence mask drops them): of all target tokens; numbers from the prompt among "
          "them; the dropped tokens' share of all tokens' -log c |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row, r in res.items():
        a = r["analysis"]
        if a:
            m, g = a.get("masked"), a.get("given")  # (analyses written before gen --analyze counted them have none)
            total = a["tokens"]["cuda"] + a["tokens"]["neutral"]
            masked = "%d of %d (%.1f%%); %s; %.1f%%" % (m["tokens"], total, 100 * m["tokens"] / (total or 1),
                                                      m.get("given", "-"), 100 * m["nll_share"]) if m else "-"
            given = "%.3f / %.3f (%.1f%%)" % (g["mean_cuda"], g["mean_neutral"], 100 * g["nll_share"]) if g else "-"
            L.append("| %s | %.3f | %.3f | %s | %.3f (%.2g) | %.1f%% | %.1f%% | %.3f | %s |" % (
                label(res, row), a["mean"]["cuda"], a["mean"]["neutral"], given, a["ks"]["d"], a["ks"]["p"],
                100 * a["low_share"], 100 * a["low_overlap"]["any"], a["mean_w"], masked))
    given = [r["analysis"]["given"] for r in res.values() if r["analysis"] and r["analysis"].get("given")]
    if given:
        L += ["", "Numbers from the prompt: the target tokens of the validation samples that copy a number the prompt "
              "states, %d in CUDA-sensitive spans (e.g. a scale in a kernel) and %d elsewhere (e.g. the size in main). "
              "Each program must get them right; a mean over all tokens hides them." % (
                  given[0]["cuda"], given[0]["tokens"] - given[0]["cuda"])]
    L += gradient_table(res, shown_seed)
    return "\n".join(L) + "\n"


def method_line(st, res):
    """markdown: the method's parameters this run used and, in one sentence, CuSeT's coefficient"""
    num = lambda k, default: "%g" % st[k] if isinstance(st.get(k), (int, float)) else default
    return ("Method (README, \"The method\"): confidence threshold tau = %s (ProFit's and CuSeT's confidence mask), "
            "window l = %s tokens (CuSeT's w_n), CUDA-mask weight lambda = %s; EAFT's alpha = %s, ASFT's beta = %s%s. "
            "CuSeT multiplies each target token's cross-entropy by M x w_n: the mask M = 1[c > tau] + lambda x "
            "1[CUDA-sensitive] (0, 1 or 1 + lambda) and the sample weight w_n = 1 - C_n, C_n the lowest mean "
            "confidence c over the windows of l tokens of sample n. \"%s\" leaves out w_n (w_n = 1), "
            "\"%s\" the CUDA term; ProFit is the confidence mask alone." % (
                num("tau", "?"), num("window", "?"), num("lambda", "1"), num("eaft_alpha", "1"), num("asft_beta", "0.1"),
                " (train's defaults)" if "lambda" in st else " (train's defaults when this run was made)",
                LABEL["cuset_conf_cuda"], LABEL["cuset_conf_rew"]))


def wrong_size_table(res):
    """markdown lines: per row, the sizes asked of its outputs of another size, each with the
    sizes written instead ([] when no row has any)"""
    rows = [row for row, r in res.items() if r.get("wrong_sizes")]
    if not rows:
        return []
    num = lambda x: "%d" % x if x == int(x) else "%.1f" % x
    L = ["", "## Outputs of another size: the size asked and the sizes written (all seeds)", "",
         "From data/corpus --compare's \"has N bytes, expected M (n x type)\": per size the task's output should have "
         "(elements; how many programs wrote another), the sizes those programs wrote instead (x how many), the most "
         "frequent first. A size asked that takes nearly all of a row's is one number the model lost, not the copying "
         "of sizes in general. A program that writes a larger size than the task's mostly crashes reading its input "
         "first (counted above as a crash on an unreadable input) and is not in this table.", "",
         "| model | outputs of another size | size asked (programs): sizes written |", "| --- | --- | --- |"]
    for row in rows:
        r = res[row]
        cells = ["%s (%d): %s" % (num(a), n, ", ".join("%s x%d" % (num(w), c) for w, c in ws[:4]) + ", ..." * (len(ws) > 4))
                 for a, n, ws in r["wrong_sizes"]]
        more = "; and %d more size%s" % (len(cells) - 3, "s" * (len(cells) > 4)) if len(cells) > 3 else ""
        L.append("| %s | %d | %s%s |" % (label(res, row), r["outcomes"]["wrong_size"], "; ".join(cells[:3]), more))
    return L


def gradient_table(res, shown_seed):
    """markdown lines: each objective's share of its logit gradient on the numbers from the
    prompt, at the base model's confidences and at its row's last checkpoint ([] when the
    analyses predate these shares)."""
    start = ((res.get("vanilla") or {}).get("analysis") or {}).get("given", {}).get("grad_share")
    if not start:
        return []
    L = ["", "## The numbers from the prompt in each objective's gradient", "",
         "Their share of the objective's gradient at the logits: the sum of a (1 - c) over their tokens over the sum "
         "over all target tokens (a token's gradient is a (softmax - onehot) / N, of L1 norm 2 a (1 - c) / N), on the "
         "analysed validation samples; at the base model's confidences, where fine-tuning starts, and at the row's own "
         "last checkpoint (seed %s). In kernels: numbers in CUDA-sensitive spans; elsewhere: the others, mostly the "
         "size in main. ASFT is left out: its KL term is not of that form." % shown_seed, "",
         "| objective | share at the start: in kernels / elsewhere | share at its end: in kernels / elsewhere | "
         "outputs of another size (all seeds) |", "| --- | --- | --- | --- |"]
    for row, r in res.items():
        if row not in start:
            continue
        end = ((r["analysis"] or {}).get("given") or {}).get("grad_share", {}).get(row)
        o = r["outcomes"]
        n = programs(o)
        L.append("| %s | %.2f%% / %.2f%% | %s | %s |" % (
            label(res, row), 100 * start[row][0], 100 * start[row][1],
            "%.2f%% / %.2f%%" % (100 * end[0], 100 * end[1]) if end else "-",
            "%.1f%%" % (100 * o["wrong_size"] / n) if "wrong_size" in o else "-"))
    return L


# ---- HTML -------------------------------------------------------------------------------

def steps_per_point(n):
    """a training curve of n steps is drawn with about 50 points: each the mean of this many"""
    return max(1, n // 50)


def block_means(points):
    """points [(step, y)] as the means of consecutive runs of steps_per_point of them, each at
    its run's last step, so that a long run's chart shows the trend rather than each step's noise"""
    k = steps_per_point(len(points))
    return [(points[min(i + k, len(points)) - 1][0], statistics.fmean(y for _, y in points[i:i + k]))
            for i in range(0, len(points), k)]


def coinciding(series):
    """groups (lists of rows, 2 or more) whose drawn series are the same points, within a
    millionth of the chart's range: in a chart one hides the other"""
    ys = [y for s in series.values() for _, y in s]
    tol = 1e-6 * max((max(ys) - min(ys)) if ys else 0, 1e-12)
    groups = []
    for row, s in series.items():
        if len(s) < 2:
            continue
        for g in groups:
            t = series[g[0]]
            if len(t) == len(s) and all(a[0] == b[0] and abs(a[1] - b[1]) <= tol for a, b in zip(s, t)):
                g.append(row)
                break
        else:
            groups.append([row])
    return [g for g in groups if len(g) > 1]


def svg_lines(series, key, title, w=300, h=170):
    """one small line chart: series = {row: [(x, y)]}. The y axis spans the data with a
    tenth of their range above and below; a span that is a small part of its values (a
    trend that fills the chart but moves little) is said in the chart"""
    pts = [p for s in series.values() for p in s]
    if not pts:
        return ""
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    d0, d1 = min(p[1] for p in pts), max(p[1] for p in pts)
    y0, y1 = d0, d1
    if y1 - y0 < 1e-9:
        y0, y1 = y0 - 0.5, y0 + 0.5
    pad = 0.1 * (y1 - y0)
    y0, y1 = y0 - pad, y1 + pad
    if x1 == x0:
        x1 = x0 + 1
    ml, mr, mt, mb = 44, 8, 20, 22
    sx = lambda x: ml + (x - x0) / (x1 - x0) * (w - ml - mr)
    sy = lambda y: mt + (1 - (y - y0) / (y1 - y0)) * (h - mt - mb)
    o = ['<svg width="%d" height="%d" viewBox="0 0 %d %d" class="chart">' % (w, h, w, h),
         '<text x="%d" y="13" class="t">%s</text>' % (ml, html.escape(title))]
    ticks = [d0, (d0 + d1) / 2, d1] if d1 > d0 else [d0]  # the data's lowest, middle and highest values
    digits = 3  # significant digits: as many as it takes for the labels to differ
    while digits < 9 and len({"%.*g" % (digits, y) for y in ticks}) < len(ticks):
        digits += 1
    for y in ticks:
        o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="grid"/><text x="%d" y="%.1f" class="ax" '
                 'text-anchor="end">%.*g</text>' % (ml, w - mr, sy(y), sy(y), ml - 3, sy(y) + 3, digits, y))
    top = max(abs(d0), abs(d1))
    if d1 > d0 and (d1 - d0) < 0.2 * top:  # zoomed in: the whole height is a small change
        o.append('<text x="%d" y="%d" class="ax zoom" text-anchor="middle">zoomed: a span of %.2g%% of %.3g</text>' % (
            (ml + w - mr) / 2, h - 6, 100 * (d1 - d0) / top, top))
    o.append('<text x="%d" y="%d" class="ax">step %d</text><text x="%d" y="%d" class="ax" text-anchor="end">%d</text>'
             % (ml, h - 6, x0, w - mr, h - 6, x1))
    for row, s in series.items():
        if len(s) > 1:
            d = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", sx(x), sy(y)) for i, (x, y) in enumerate(s))
            o.append('<path d="%s" stroke="%s" fill="none" stroke-width="1.5"%s><title>%s</title></path>' %
                     (d, COLORS.get(row, "#000"), ' stroke-dasharray="%s"' % DASHES[row] if DASHES.get(row) else "",
                      html.escape(LABEL.get(row, row))))
    o.append("</svg>")
    return "".join(o)


def svg_bars(res, metric, w=640, h=270):
    """pass@1 per model with error bars"""
    rows = list(res)
    vals = [res[r]["metrics"]["all"][metric] for r in rows]
    top = max([v.get("hi", v["mean"] + v.get("std", 0)) for v in vals] + [0.05])
    # grid lines at round percentages: the smallest step of 5, 10, 20 or 25% that needs at most 5
    step = next(s for s in (0.05, 0.1, 0.2, 0.25) if math.ceil(top / s - 1e-9) <= 5)
    ticks = math.ceil(top / step - 1e-9)
    top = ticks * step
    ml, mb, mt = 40, 100, 20  # (room below for the rows' names, slanted)
    bw = (w - ml - 10) / len(rows)
    sy = lambda y: mt + (1 - y / top) * (h - mt - mb)
    o = ['<svg width="%d" height="%d" viewBox="0 0 %d %d" class="chart">' % (w, h, w, h)]
    for k in range(ticks + 1):
        y = k * step
        o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="grid"/><text x="%d" y="%.1f" class="ax" '
                 'text-anchor="end">%.0f%%</text>' % (ml, w - 10, sy(y), sy(y), ml - 3, sy(y) + 3, 100 * y))
    for i, (r, v) in enumerate(zip(rows, vals)):
        x = ml + i * bw + bw * 0.15
        lo, hi = (v["lo"], v["hi"]) if "lo" in v else (v["mean"] - v["std"], v["mean"] + v["std"])
        lo = max(lo, 0)
        o.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s</title></rect>' % (
            x, sy(v["mean"]), bw * 0.7, sy(0) - sy(v["mean"]), COLORS.get(r, "#444"), html.escape(label(res, r)), fmt(v)))
        cx = x + bw * 0.35
        o.append('<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="err"/>' % (cx, cx, sy(lo), sy(hi)))
        o.append('<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="err"/>' % (cx - 5, cx + 5, sy(hi), sy(hi)))
        o.append('<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="err"/>' % (cx - 5, cx + 5, sy(lo), sy(lo)))
        o.append('<text x="%.1f" y="%.1f" class="ax" text-anchor="end" transform="rotate(-35 %.1f %.1f)">%s</text>' % (
            cx, sy(0) + 14, cx, sy(0) + 14, html.escape(label(res, r, short=True))))
    o.append("</svg>")
    return "".join(o)


def below_tau(a):
    """the share of an analysis's target tokens at or below tau (those the confidence mask drops),
    and tau; None when the analysis predates that count"""
    m = a.get("masked")
    if not m:
        return None
    total = a["tokens"]["cuda"] + a["tokens"]["neutral"]
    return m["tokens"] / (total or 1), m["tau"]


def fullest_bin(a):
    """the bin of c holding the most target tokens (both kinds): (its index, its share, bins)"""
    hc, hn, nc, nn = a["hist"]["cuda"], a["hist"]["neutral"], a["tokens"]["cuda"], a["tokens"]["neutral"]
    both = [(c * nc + u * nn) / ((nc + nn) or 1) for c, u in zip(hc, hn)]
    i = max(range(len(both)), key=lambda k: both[k])
    return i, both[i], len(both)


def hist_caption(res):
    """the histograms' caption, from the data: where the base model's tokens sit, and the share
    of each row's tokens at or below tau"""
    cap = "The share of target tokens in each of 20 bins of c, on a log scale; the dashed line marks tau."
    an = [(r, res[r]["analysis"]) for r in res if res[r]["analysis"]]
    if not an:
        return cap
    first, a = next(((r, x) for r, x in an if r == "vanilla"), an[0])
    i, share, n = fullest_bin(a)
    cap += " %s: %.1f%% of its tokens in the bin c in [%.2f, %.2f)%s" % (
        "The base model" if first == "vanilla" else res[first]["label"], 100 * share, i / n, (i + 1) / n,
        " (the last)" if i == n - 1 else " (the first)" if i == 0 else "")
    shares = [(below_tau(x), r) for r, x in an if below_tau(x)]
    if shares:
        lo, hi = min(v[0] for v, _ in shares), max(v[0] for v, _ in shares)
        mine = below_tau(a)
        cap += "; %.1f%% at or below tau = %g, which the confidence mask drops%s." % (
            100 * mine[0], mine[1], "" if len(shares) < 2 else " (the rows: %s)" % (
                "%.1f%% each" % (100 * lo) if abs(hi - lo) < 5e-4 else "from %.1f%% to %.1f%%" % (100 * lo, 100 * hi)))
        if lo > 0.5:
            cap += (" Most tokens are below tau: ProFit, and CuSeT's rows but for their CUDA term, train on few tokens "
                    "or none.")
    else:
        cap += "."
    return cap


def svg_hist(a, w=330, h=150, tau=None):
    """histograms of confidence: the share of CUDA-sensitive and of neutral target tokens per
    bin, on a log scale, and a dashed line at tau (the analysis's, else the one given)"""
    hc, hn = a["hist"]["cuda"], a["hist"]["neutral"]
    n = len(hc)
    smallest = min([v for v in hc + hn if v > 0] + [1.0])
    decades = max(1, min(6, math.floor(-math.log10(smallest)) + 1))  # the smallest share above the floor
    ml, mb, mt = 42, 22, 18
    bw = (w - ml - 6) / n
    sy = lambda v: mt - math.log10(v) / decades * (h - mt - mb)  # v in [10^-decades, 1]
    o = ['<svg width="%d" height="%d" viewBox="0 0 %d %d" class="chart">' % (w, h, w, h),
         '<text x="%d" y="12" class="t"><tspan fill="#d62728">CUDA-sensitive</tspan> / '
         '<tspan fill="#1f77b4">neutral</tspan> tokens</text>' % ml]
    for k in range(decades + 1):
        y = sy(10.0 ** -k)
        o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="grid"/><text x="%d" y="%.1f" class="ax" '
                 'text-anchor="end">%s%%</text>' % (ml, w - 6, y, y, ml - 3, y + 3, "%g" % (100 * 10.0 ** -k)))
    for i in range(n):
        x = ml + i * bw
        for j, (v, col) in enumerate(((hc[i], "#d62728"), (hn[i], "#1f77b4"))):
            if v <= 0:
                continue
            v = max(v, 10.0 ** -decades)
            o.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" opacity="0.8"><title>%s, c in '
                     '[%.2f, %.2f): %.3g%%</title></rect>' % (x + j * bw / 2, sy(v), bw / 2, sy(10.0 ** -decades) - sy(v),
                                                            col, "CUDA-sensitive" if j == 0 else "neutral", i / n,
                                                            (i + 1) / n, 100 * v))
    tau = (a.get("masked") or {}).get("tau", tau)
    if tau is not None and 0 <= tau <= 1:  # the confidence masks' threshold (bins are equal widths of [0, 1])
        x = ml + tau * n * bw
        o.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" class="tau"/><text x="%.1f" y="%d" class="ax">tau = %g</text>'
                 % (x, x, mt - 4, h - mb, x + 3, mt + 8, tau))
    o.append('<text x="%d" y="%d" class="ax">c = 0</text><text x="%d" y="%d" class="ax" text-anchor="end">c = 1</text>' % (
        ml, h - 6, w - 6, h - 6))
    o.append("</svg>")
    return "".join(o)


def conf_color(c):
    """red (c = 0) to white (c = 1)"""
    c = min(max(c, 0.0), 1.0)
    return "rgb(255,%d,%d)" % (int(90 + 165 * c), int(90 + 165 * c))


def sample_view(v, title):
    """the program, each token colored by its confidence; CUDA-sensitive tokens underlined,
    the hardest window of eq. 7 outlined, numbers copied from the prompt in bold blue"""
    o = ['<div class="view"><div class="vh">%s: C_n = %.3f, w_n = %.3f; hardest window tokens %d-%d (outlined), '
         'lowest 64-token window %d-%d</div><pre>' % (html.escape(title), v["C"], v["w"], v["hard"][0], v["hard"][1],
                                                      v["low"][0], v["low"][1])]
    lo, hi = v["hard"]
    given = set(v.get("given", ()))  # (views written before gen --analyze marked them have none)
    for k, (tok, c, kind) in enumerate(zip(v["tokens"], v["conf"], v["kinds"])):
        if k == lo:
            o.append('<span class="hard">')
        classes = " ".join(name for name, on in (("cuda", kind), ("given", k in given)) if on)
        o.append('<span style="background:%s"%s title="c = %.3f">%s</span>' % (
            conf_color(c), ' class="%s"' % classes if classes else "", c, html.escape(tok)))
        if k == hi:
            o.append("</span>")
    o.append("</pre></div>")
    return "".join(o)


CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1180px;color:#222;padding:0 16px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}
.chart{background:#fff;border:1px solid #e4e4e4;margin:4px}.t{font-size:12px;font-weight:600}.ax{font-size:10px;fill:#555}
.grid{stroke:#eee}.err{stroke:#000;stroke-width:1.2}.charts{display:flex;flex-wrap:wrap}
.legend span{display:inline-block;margin-right:12px}.legend i{display:inline-block;width:18px;height:4px;margin-right:4px;vertical-align:middle}
pre{white-space:pre-wrap;font:12px/1.35 ui-monospace,monospace;border:1px solid #ddd;padding:8px;max-height:420px;overflow:auto}
.cuda{text-decoration:underline 2px #000}.given{font-weight:700;color:#0033cc}.hard{outline:2px solid #00f;outline-offset:1px}.vh{font-weight:600;margin-top:12px}
.note{color:#555}.banner{background:#fff4d6;border:1px solid #d9a400;padding:8px 12px;margin:10px 0}
td.n{white-space:nowrap}.tau{stroke:#000;stroke-width:1;stroke-dasharray:4 3}.zoom{fill:#a33}.cap{font-size:11px;color:#555;max-width:300px;margin:0 4px 6px}
.legend svg{vertical-align:middle;margin-right:4px}"""


# a table cell of numbers only (a value, an interval, a p-value): kept on one line
NUMBERS = re.compile(r"[-+0-9.,;%()\[\]/ e±]+")


def md_table_html(md):
    """the markdown tables of results.md as HTML (header lines become headings)"""
    out, rows = [], []

    def flush():
        if rows:
            out.append("<table>")
            for i, r in enumerate(rows):
                tag = "th" if i == 0 else "td"
                out.append("<tr>" + "".join("<%s%s>%s</%s>" % (
                    tag, ' class="n"' if tag == "td" and NUMBERS.fullmatch(c.strip()) else "", html.escape(c.strip()), tag)
                    for c in r) + "</tr>")
            out.append("</table>")
            rows.clear()
    for line in md.splitlines():
        if line.startswith("|"):
            cells = line.strip().strip("|").split("|")
            if not all(set(c.strip()) <= set("-") for c in cells):
                rows.append(cells)
            continue
        flush()
        if line.startswith("## "):
            out.append("<h2>%s</h2>" % html.escape(line[3:]))
        elif line.startswith("# "):
            out.append("<h1>%s</h1>" % html.escape(line[2:]))
        elif line.startswith("> "):  # a warning: the markdown's quote, bold kept
            out.append('<div class="banner">%s</div>' % re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>",
                                                              html.escape(line[2:])))
        elif line.strip():
            out.append('<p class="note">%s</p>' % html.escape(line))
    flush()
    return "\n".join(out)


def report_html(res, md, shown_seed):
    o = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>CuSeT experiment</title><style>%s</style></head><body>" % CSS]
    o.append(md_table_html(md))
    o.append("<h2>Pass@1 per model</h2><div class='charts'><div><div class='vh'>functional</div>%s</div>"
             "<div><div class='vh'>compilation</div>%s</div></div>" % (svg_bars(res, "functional@1", w=560),
                                                                    svg_bars(res, "compile@1", w=560)))
    def chart(rows, key, title, caption="", w=300, h=170):  # one quantity of the training logs, as block means
        series = {r: block_means([(d["step"], d[key]) for d in res[r]["curve"] if key in d]) for r in rows}
        svg = svg_lines(series, key, title, w, h)
        same = coinciding(series)
        if same:
            caption += (" " if caption else "") + "Drawn on top of one another (the same values): %s." % "; ".join(
                " = ".join(SHORT.get(r, LABEL.get(r, r)) for r in g) for g in same)
        return "<div>%s%s</div>" % (svg, "<div class='cap'>%s</div>" % html.escape(caption) if caption and svg else "")

    ft = [r for r in res if r != "vanilla" and res[r]["curve"]]
    base = res.get("vanilla", {}).get("curve")
    o.append("<h2>Training curves (seed %s; fine-tuning rows from the base checkpoint)</h2>" % html.escape(shown_seed))
    per = lambda n: "one step" if steps_per_point(n) == 1 else "the mean of %d consecutive steps" % steps_per_point(n)
    if ft or base:
        o.append("<p class='note'>Each point is %s%s. Each axis spans its data (the labels: the lowest, middle and "
                 "highest value); \"zoomed\" marks an axis whose whole height is a small change.</p>" % (
                     per(len(res[ft[0]]["curve"] if ft else base)), "; the base model's, %s" % per(len(base)) if ft and base else ""))
    # the legend: the rows these charts draw, each with its line's color and pattern
    o.append('<div class="legend">' + "".join(
        '<span><svg width="26" height="8"><line x1="0" x2="26" y1="4" y2="4" stroke="%s" stroke-width="2"%s/></svg>%s</span>'
        % (COLORS[r], ' stroke-dasharray="%s"' % DASHES[r] if DASHES.get(r) else "", html.escape(label(res, r)))
        for r in ft) + "</div><div class='charts'>")
    for key, title in (("ce", "cross-entropy on targets"), ("conf", "mean confidence c"),
                       ("pass", "share of tokens with c > tau"), ("w", "mean w_n")):
        o.append(chart(ft, key, title))
    o.append("</div>")
    if ft:  # the objectives' scales differ, so each gets its own axis
        o.append("<p class='note'>The objective each row minimizes, one chart each, every one on its own axis: their "
                 "scales differ (a masked or weighted objective sums less than the cross-entropy, ASFT's adds a KL "
                 "term), so read each line's trend; the cross-entropy above compares the rows.</p><div class='charts'>"
                 + "".join(chart([r], "loss", "objective: %s" % label(res, r, short=True), h=150) for r in ft)
                 + "</div>")
    if base:
        o.append("<div class='charts'>%s%s</div>" % (chart(["vanilla"], "loss", "base model: SFT loss"),
                                                      chart(["vanilla"], "conf", "base model: mean confidence")))
    o.append("<h2>Confidence histograms</h2><p class='note'>%s</p><div class='charts'>" % html.escape(hist_caption(res)))
    for r in res:
        a = res[r]["analysis"]
        if a:
            b = below_tau(a)
            o.append("<div style='width:340px;margin-right:10px'><div class='vh'>%s</div>%s<div class='note'>KS D = %.3f, p = %.2g%s</div></div>" % (
                html.escape(label(res, r)), svg_hist(a), a["ks"]["d"], a["ks"]["p"],
                "; c <= tau: %.1f%% of tokens" % (100 * b[0]) if b else ""))
    o.append("</div><h2>Samples through the models' eyes</h2><p class='note'>Background: confidence of each token "
             "(red = low, white = high); underlined: CUDA-sensitive; bold blue: a number copied from the prompt; "
             "outlined: the hardest window of eq. 7.</p>")
    for r in ("vanilla", "sft", "cuset"):
        a = res.get(r, {}).get("analysis")
        if a and a["views"]:
            o.append(sample_view(a["views"][0], "%s, validation sample %d" % (label(res, r), a["views"][0]["index"])))
    o.append("</body></html>")
    return "\n".join(o)


def view_only(path, out):
    a = load_json(path)
    body = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>confidence view</title><style>%s</style></head><body>" % CSS,
            "<h1>Confidence view: %s</h1>" % html.escape(path), svg_hist(a)]
    body += [sample_view(v, "sample %d" % v["index"]) for v in a["views"]]
    body.append("</body></html>")
    write(out, "\n".join(body), "give --out a path you can write to")


def write(path, text, what_to_do):
    """text into path, through path.tmp (a reader never sees half a file); a failure (a read-only
    run, a full disk) stops with a message that names the file and what_to_do, not a traceback"""
    try:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    except OSError as e:
        try:
            os.remove(path + ".tmp")
        except OSError:
            pass
        sys.exit("experiment_report: cannot write %s (%s): %s" % (path, e.strerror or e, what_to_do))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", nargs="?")
    ap.add_argument("--settings")
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--against")
    ap.add_argument("--view")
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.view:
        view_only(a.view, a.out or os.path.splitext(a.view)[0] + ".html")
        return
    if not a.run:
        ap.error("give RUN (the experiment's directory) or --view FILE")
    if not os.path.isdir(a.run):
        sys.exit("experiment_report: %s: not a directory (give the experiment's RUN)" % a.run)
    made = os.path.join(a.run, "results.json")  # the report made before: settings and time when not given
    made = load_json(made) if (a.settings is None or a.seconds is None) and os.path.exists(made) else {}
    settings = json.loads(a.settings) if a.settings is not None else made.get("settings", {})
    seconds = a.seconds if a.seconds is not None else made.get("seconds", 0)
    seeds = [s for s in str(settings.get("seeds", "1")).split(",") if s]
    res = gather(a.run, seeds)
    if not res:
        sys.exit("experiment_report: no evaluation results (seed*/ROW.eval.json) in %s" % a.run)
    if a.against and not os.path.isdir(a.against):
        sys.exit("experiment_report: --against %s: not a directory (give another experiment's RUN)" % a.against)
    vs = against(a.run, res, a.against, seeds) if a.against else None
    if a.against and not vs:
        print("experiment_report: --against %s has none of this run's seeds (%s): no comparison" % (
            a.against, ",".join(seeds)), file=sys.stderr)
    missing = ["%s (seed %s)" % (row, s) for row, _, _ in ROWS for s in seeds
               if not os.path.exists(os.path.join(a.run, "seed%s" % s, row + ".eval.json"))]
    if missing:
        print("experiment_report: unfinished run, not scored yet: %s (the report says so)" % ", ".join(missing),
              file=sys.stderr)
    md = markdown(res, settings, seconds, seeds[0], vs, missing)
    doc = {"settings": settings, "seconds": seconds, "rows": res}
    if vs:
        doc["against"] = vs
    for name, text in (("results.json", json.dumps(doc, indent=1)),
                       ("results.md", md), ("report.html", report_html(res, md, seeds[0]))):
        write(os.path.join(a.run, name), text,
              "the report goes into the run's directory %s. Make it writable (chmod u+w), or copy the run "
              "(cp -r %s COPY) and make the report there" % (a.run, a.run))


if __name__ == "__main__":
    main()
