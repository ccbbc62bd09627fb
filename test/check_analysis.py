#!/usr/bin/env python3
"""Recomputes a `gen --analyze` summary from its per-sample views, independently of the C
code: METHOD.md's eqs. 2 and 5-8 written again here (1-based windows, as the page writes them),
and the objectives' token coefficients for the numbers' share of each objective's gradient;
KS with scipy when it is installed. The analysis must have been run with --views at least
its number of samples. With the data file it was run on (from its first sample, none left
out), the tokens of the numbers copied from the prompt are found again too, with a regular
expression instead of the C scanner.

    test/check_analysis.py ANALYSIS.json [DATA.jsonl]   exit 0 when everything agrees, else 1
"""
import json
import math
import re
import sys

# a decimal literal of data/confidence.h's cuset_given_numbers: not after a name character
# or a '.', not followed by more of a number, then at most one suffix f/u/l before a
# character that cannot continue a name
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:\.\d+)?(?!\d|\.\d)(?=[fFuUlL](?![A-Za-z0-9_])|(?![A-Za-z0-9_]))")


def given_tokens(prompt, completion, tokens):
    """indices of the tokens that overlap a literal of two or more characters the prompt has too"""
    stated = {m.group() for m in NUMBER.finditer(prompt) if len(m.group()) >= 2}
    ranges = [(m.start(), m.end()) for m in NUMBER.finditer(completion) if len(m.group()) >= 2 and m.group() in stated]
    out, pos = [], 0
    for k, t in enumerate(tokens):
        end = pos + len(t)
        if any(a < end and pos < b for a, b in ranges):
            out.append(k)
        pos = end
    return out


def median(v):
    v = sorted(v)
    n = len(v)
    return 0.0 if not n else v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def hardest_window(c, l):
    """eqs. 5-7: C_n = min over t of the mean of c over max(1, t - l//2) .. min(T, t + ceil(l/2) - 1)"""
    T = len(c)
    best = None
    for t in range(1, T + 1):
        lo, hi = max(1, t - l // 2), min(T, t + (l + 1) // 2 - 1)
        m = sum(c[lo - 1:hi]) / (hi - lo + 1)
        if best is None or m < best[0] - 1e-12:
            best = (m, lo - 1, hi - 1)
    return best


def lowest_window(c, w):
    w = min(w, len(c))
    means = [sum(c[s:s + w]) / w for s in range(len(c) - w + 1)]
    m = min(means)
    return means.index(m), m


def main():
    a = json.load(open(sys.argv[1], encoding="utf-8", errors="replace"))
    views, l, probe = a["views"], a["window"], a["probe"]
    problems = []

    def close(name, got, want, tol=2e-4):
        if abs(got - want) > tol * max(1.0, abs(want)):
            problems.append("%s: the C code says %.6g, recomputed %.6g" % (name, got, want))

    if len(views) != a["samples"]:
        sys.exit("check_analysis: %d views for %d samples: run gen --analyze with --views >= the sample count" %
                 (len(views), a["samples"]))
    cuda = [c for v in views for c, k in zip(v["conf"], v["kinds"]) if k]
    neutral = [c for v in views for c, k in zip(v["conf"], v["kinds"]) if not k]
    if (len(cuda), len(neutral)) != (a["tokens"]["cuda"], a["tokens"]["neutral"]):
        problems.append("token counts %s, recomputed %d / %d" % (a["tokens"], len(cuda), len(neutral)))
    mean_c, mean_n = sum(cuda) / max(len(cuda), 1), sum(neutral) / max(len(neutral), 1)
    close("mean cuda", a["mean"]["cuda"], mean_c)
    close("mean neutral", a["mean"]["neutral"], mean_n)
    close("median cuda", a["median"]["cuda"], median(cuda), 1e-3)
    close("median neutral", a["median"]["neutral"], median(neutral), 1e-3)
    bins = a["hist"]["bins"]
    for name, vals in (("cuda", cuda), ("neutral", neutral)):
        h = [0] * bins
        for c in vals:
            h[min(max(int(c * bins), 0), bins - 1)] += 1
        for b in range(bins):
            close("histogram %s bin %d" % (name, b), a["hist"][name][b], h[b] / max(len(vals), 1), 1e-3)
    try:
        import scipy.stats as st
        d = st.ks_2samp(cuda, neutral).statistic
        close("KS D", a["ks"]["d"], d, 1e-4)
        en = len(cuda) * len(neutral) / (len(cuda) + len(neutral))
        close("KS p", a["ks"]["p"], st.kstwobign.sf(math.sqrt(en) * a["ks"]["d"]), 1e-3)
    except ImportError:
        print("note: scipy is not installed: KS not recomputed")
    low, touch, ws = 0, [0, 0, 0, 0], []
    for v in views:
        C, lo, hi = hardest_window(v["conf"], l)
        ws.append(1 - C)
        close("sample %d C_n" % v["index"], v["C"], C, 1e-4)
        if [lo, hi] != v["hard"] and abs(sum(v["conf"][v["hard"][0]:v["hard"][1] + 1]) / (v["hard"][1] - v["hard"][0] + 1) - C) > 1e-4:
            problems.append("sample %d: hardest window %s, recomputed %s" % (v["index"], v["hard"], [lo, hi]))
        s, m = lowest_window(v["conf"], probe)
        if m < mean_n:
            low += 1
            k = 0
            for t in range(s, s + min(probe, len(v["conf"]))):
                k |= v["kinds"][t]
            touch[0] += k != 0
            touch[1] += bool(k & 1)
            touch[2] += bool(k & 2)
            touch[3] += bool(k & 4)
    close("share of samples with a low window", a["low_share"], low / len(views), 1e-4)
    for name, j in (("any", 0), ("definition", 1), ("launch", 2), ("dim3", 3)):
        close("low windows on %s" % name, a["low_overlap"][name], touch[j] / low if low else 0.0, 1e-4)
    close("mean w_n", a["mean_w"], sum(ws) / len(ws), 1e-4)
    # the tokens eq. 2's mask drops (c <= tau), grouped by text, most frequent first, then by text
    m, tau = a["masked"], a["masked"]["tau"]
    dropped = [(t, k) for v in views for c, k, t in zip(v["conf"], v["kinds"], v["tokens"]) if c <= tau]
    if (m["tokens"], m["cuda"], m["neutral"]) != (len(dropped), sum(1 for t, k in dropped if k),
                                                  sum(1 for t, k in dropped if not k)):
        problems.append("masked tokens %s, recomputed %d" % ({x: m[x] for x in ("tokens", "cuda", "neutral")}, len(dropped)))
    masked_given = sum(1 for v in views for t, c in enumerate(v["conf"]) if c <= tau and t in set(v["given"]))
    if m["given"] != masked_given:
        problems.append("masked tokens that are numbers from the prompt: %d, recomputed %d" % (m["given"], masked_given))
    nll = lambda c: -math.log(max(c, 1e-30))
    total = sum(nll(c) for v in views for c in v["conf"])
    close("masked share of -log c", m["nll_share"], sum(nll(c) for v in views for c in v["conf"] if c <= tau) / total
          if total else 0.0, 1e-4)
    groups = {}
    for t, k in dropped:
        g = groups.setdefault(t, [0, 0])
        g[0] += 1
        g[1] += bool(k)
    most = sorted(groups.items(), key=lambda g: (-g[1][0], g[0].encode()))[:20]
    if [(g["text"], g["count"], g["cuda"]) for g in m["most"]] != [(t, n, k) for t, (n, k) in most]:
        problems.append("most frequent masked tokens %s, recomputed %s" % (m["most"][:3], most[:3]))
    # the tokens of the numbers copied from the prompt
    g = a["given"]
    given = [(c, k) for v in views for t, (c, k) in enumerate(zip(v["conf"], v["kinds"])) if t in set(v["given"])]
    if (g["tokens"], g["cuda"]) != (len(given), sum(1 for c, k in given if k)):
        problems.append("given numbers' tokens %s, recomputed %d" % (g, len(given)))
    for name, part in (("mean", given), ("mean_cuda", [x for x in given if x[1]]), ("mean_neutral", [x for x in given if not x[1]])):
        close("given numbers' %s c" % name, g[name], sum(c for c, k in part) / len(part) if part else 0.0, 1e-4)
    close("given numbers' share of -log c", g["nll_share"], sum(nll(c) for c, k in given) / total if total else 0.0, 1e-4)
    # their share of each objective's logit gradient, sum of a (1 - c) over them / over all
    # tokens: METHOD.md's coefficients written again (lambda 1, the analysis's tau, w_n from
    # the windows above); EAFT's weight is taken from the views (it needs the logits), only
    # its range checked: the entropy of 20 probabilities is at most ln 20.
    coef = {"sft": lambda c, k, w, e: 1.0, "dft": lambda c, k, w, e: c, "profit": lambda c, k, w, e: float(c >= tau),
            "eaft": lambda c, k, w, e: e, "cuset": lambda c, k, w, e: w * ((c > tau) + bool(k)),
            "cuset_conf_cuda": lambda c, k, w, e: (c > tau) + bool(k), "cuset_conf_rew": lambda c, k, w, e: w * (c > tau)}
    if sorted(g["grad_share"]) != sorted(coef):
        problems.append("gradient shares for %s, expected %s" % (sorted(g["grad_share"]), sorted(coef)))
    if not all(0 <= e <= math.log(20) / 3 + 1e-6 for v in views for e in v["eaft"]):
        problems.append("an EAFT weight outside [0, ln(20) / 3]")
    for name, f in coef.items():
        terms = [(f(c, k, w, e) * (1 - c), t in set(v["given"]), bool(k)) for v, w in zip(views, ws)
                 for t, (c, k, e) in enumerate(zip(v["conf"], v["kinds"], v["eaft"]))]
        whole = sum(x for x, _, _ in terms)
        for j, part in enumerate(("CUDA-sensitive", "neutral")):
            close("%s given numbers' share of %s's logit gradient" % (part, name), g["grad_share"].get(name, [-1, -1])[j],
                  sum(x for x, given_t, cuda_t in terms if given_t and cuda_t == (j == 0)) / whole if whole else 0.0, 1e-4)
    if len(sys.argv) > 2:
        data = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8")]
        for v in views:
            d = data[v["index"]]
            want = given_tokens(d["prompt"], d["completion"], v["tokens"])
            if want != v["given"]:
                problems.append("sample %d: given numbers' tokens %s, found again %s" % (v["index"], v["given"], want))
    if problems:
        print("\n".join(problems[:10]))
        sys.exit(1)
    print("%d samples, %d + %d tokens: means, medians, histograms, KS, windows, shares, w_n, the %d tokens of numbers "
          "from the prompt%s with their share of 7 objectives' gradients, and the %d masked tokens agree" %
          (len(views), len(cuda), len(neutral), len(given), " (found again in the data)" if len(sys.argv) > 2 else "",
           len(dropped)))


if __name__ == "__main__":
    main()
