"""data/json.h, the JSON reader of config.json, tokenizer.json, safetensors headers and the
corpus's specs, against Python's json module: fresh random documents each run (nested
objects and arrays, numbers of every form, strings with escapes, surrogate pairs and UTF-8)
and mutations of them (a character inserted, deleted or replaced, the end cut off). Each
must give the same values, or be refused by both. Python's json is laxer in three ways
that RFC 8259 forbids, which json.h refuses: NaN/Infinity (refused here through
parse_constant), lone surrogates, numbers beyond double's range; and json.h refuses
nesting deeper than 64. Drives `test/test_gpt2 json`. Prints PASS/FAIL lines.
    test/test_json.py [--seed N] [--count N]
"""
import json, math, os, random, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_DEPTH = 64  # data/json.h's CUSET_JSON_MAX_DEPTH


class Obj(list):  # an object's (key, value) pairs, in order, duplicates kept
    pass


def refuse_constant(name):
    raise ValueError("not JSON: " + name)


def canon(v, depth=0):
    """The value as test_gpt2's print_json writes it; ValueError where json.h must refuse."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if v is None or v is True or v is False:
        return {None: "n", True: "t", False: "f"}[v]
    if isinstance(v, float):
        if math.isinf(v):
            raise ValueError("number out of range")
        return "%.17g" % v
    if isinstance(v, str):
        return '"%s"' % v.encode("utf-8").hex()  # UnicodeEncodeError (a ValueError): a lone surrogate
    if isinstance(v, Obj):
        return "{%s}" % ",".join('"%s":%s' % (k.encode("utf-8").hex(), canon(x, depth + 1)) for k, x in v)
    return "[%s]" % ",".join(canon(x, depth + 1) for x in v)


def python_says(text):
    try:
        v = json.loads(text, object_pairs_hook=Obj, parse_int=float, parse_float=float,
                       parse_constant=refuse_constant)
        return canon(v)
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeEncodeError, ours; too deep for Python
        return None


def random_string(rng):
    out = []
    for _ in range(rng.randrange(8)):
        r = rng.random()
        if r < 0.5:
            out.append(rng.choice("abcXYZ 09_-/"))
        elif r < 0.65:
            out.append(rng.choice(['\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"]))
        elif r < 0.8:  # \uXXXX: any BMP code point, NUL too
            out.append("\\u%04x" % rng.randrange(0x10000))
        elif r < 0.9:  # a surrogate pair, by escapes
            c = rng.randrange(0x10000, 0x110000) - 0x10000
            out.append("\\u%04X\\u%04x" % (0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF)))
        else:  # raw UTF-8
            out.append(rng.choice(["\u00e9", "\u20ac", "\u65e5", "\U0001F600"]))
    return '"%s"' % "".join(out)


def random_number(rng):
    s = rng.choice(["", "-"]) + rng.choice(["0", str(rng.randrange(1, 10)), str(rng.randrange(10 ** 18))])
    if rng.random() < 0.4:
        s += "." + str(rng.randrange(10 ** rng.randrange(1, 12))).zfill(rng.randrange(1, 4))
    if rng.random() < 0.3:
        s += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randrange(0, 400))
    return s


def random_value(rng, depth):
    r = rng.random()
    ws = lambda: rng.choice(["", "", " ", "\n", "\t ", "\r\n"])
    if depth < 6 and r < 0.3:
        items = [random_value(rng, depth + 1) for _ in range(rng.randrange(5))]
        return "[" + ws() + ("," + ws()).join(items) + ws() + "]"
    if depth < 6 and r < 0.6:
        members = ["%s%s:%s%s" % (random_string(rng), ws(), ws(), random_value(rng, depth + 1))
                   for _ in range(rng.randrange(5))]
        return "{" + ws() + ("," + ws()).join(members) + ws() + "}"
    if r < 0.75:
        return random_number(rng)
    if r < 0.9:
        return random_string(rng)
    return rng.choice(["true", "false", "null"])


def mutate(rng, text):
    k = rng.randrange(len(text) + 1)
    what = rng.randrange(4)
    if what == 0:  # insert
        return text[:k] + rng.choice('{}[]",:\\ -+0.eE1tfnu\t\n\x01NI') + text[k:]
    if what == 1:
        return text[:k] + text[k + 1:]
    if what == 2:
        return text[:k] + rng.choice('{}[]",:\\ -+0.eE1x') + text[k + 1:]
    return text[:k]


def main():
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else random.randrange(1 << 30)
    count = int(sys.argv[sys.argv.index("--count") + 1]) if "--count" in sys.argv else 4000
    rng = random.Random(seed)
    docs = [random_value(rng, 0) for _ in range(count // 2)]
    docs += [mutate(rng, rng.choice(docs)) for _ in range(count - len(docs))]
    # the edges: values at depth MAX_DEPTH (allowed) and one more, numbers at double's end, a
    # long number, NaN, lone surrogates, malformed numbers and separators, keys with NUL and twice
    deep = lambda n, inner: "[" * n + inner + "]" * n
    docs += [deep(MAX_DEPTH + 1, ""), deep(MAX_DEPTH + 2, ""), deep(MAX_DEPTH, "1"), deep(MAX_DEPTH + 1, "1"),
             '{"a":' * MAX_DEPTH + "0" + "}" * MAX_DEPTH, '{"a":' * (MAX_DEPTH + 1) + "0" + "}" * (MAX_DEPTH + 1),
             "1.7976931348623157e308",
             "1.8e308", "-4.9e-324", "1e-400", "0." + "1" * 300, "NaN", "[Infinity]", '"\\ud800"', '"\\udc00x"',
             '"\\ud800\\u0041"', "", " ", "01", "-", "+1", "1.", ".5", "[1,]", '{"a":1,}', '{"a" 1}', "[1 2]",
             'true false', '"\x1f"', '"a', "[" * 3000, '{"a\\u0000b":1,"a":2,"a":3}']
    with tempfile.TemporaryDirectory(prefix="cuset_json.") as tmp:
        path = os.path.join(tmp, "docs")
        with open(path, "wb") as f:
            for d in docs:
                b = d.encode("utf-8", "surrogatepass")
                f.write(struct.pack("<I", len(b)) + b)
        r = subprocess.run([os.path.join(HERE, "test_gpt2"), "json", path], capture_output=True, text=True)
    got = r.stdout.split("\n")[:-1]
    if r.returncode != 0 or len(got) != len(docs):
        print("FAIL json_against_python: test_gpt2 json exited %d with %d lines for %d documents: %s"
              % (r.returncode, len(got), len(docs), r.stderr.strip()[-300:]))
        return 1
    wrong, accepted = [], 0
    for d, g in zip(docs, got):
        want = python_says(d)
        accepted += want is not None
        if (want is None) != g.startswith("error") or (want is not None and g != want):
            wrong.append((d, g, want))
    detail = "%d documents (seed %d), %d valid, %d refused by both" % (len(docs), seed, accepted, len(docs) - accepted)
    if wrong:
        d, g, want = wrong[0]
        print("FAIL json_against_python: %d of %s differ; first %r: json.h %s, Python %s"
              % (len(wrong), detail, d[:200], g[:200], want and want[:200]))
        return 1
    print("PASS json_against_python: " + detail)
    return 0


sys.exit(main())
