"""Every corpus program declares each name once per block of each function.

usage: check_names.py CORPUS.jsonl...

A second declaration of a name in one block does not compile (conv2d's output height out_h
beside its output's host buffer out_h in the x_h naming style did, in 1 of 2,000 training
programs of the default corpus). An independent reading of the text, not of the generator's
tables: a function's parameters are declared in its body's outermost block; in a body,
declarations are the statements that start with a type, their names the top-level
declarators; braces open and close blocks; for-loop headers are their own scope.
Prints the programs and declarations read; exits 1 naming each program with a repeat.
"""
import json
import re
import sys

TYPE = (r"(?:(?:const|static|constexpr|unsigned|volatile|__shared__)\s+)*"
        r"(?:int|long|float|double|size_t|dim3|half|__half|float4|bool|char|auto|FILE|"
        r"u?int(?:8|16|32|64)_t|cuda(?:Event|Error|Stream)_t|std::vector<[^>]*>)\b")
DECLARATION = re.compile(r"\s*" + TYPE + r"(.*);\s*$")
DECLARATOR = re.compile(r"[\s*&]*(?:__restrict__\s*)?([A-Za-z_]\w*)")


def top_level_parts(text):
    """text split at the commas outside parentheses, brackets and braces"""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def parameters(signature):
    """the parameter names of a function whose text so far is signature: its last (...)"""
    end = signature.rindex(")")
    start, depth = end, 0
    while True:  # the "(" that matches the last ")"
        depth += {")": 1, "(": -1}.get(signature[start], 0)
        if depth == 0:
            break
        start -= 1
    inside = signature[start + 1:end]
    names = [re.findall(r"[A-Za-z_]\w*", p) for p in top_level_parts(inside.split("=")[0])]
    return [n[-1] for n in names if len(n) > 1]  # (a lone void, or an unnamed parameter: none)


def repeats(code):
    """the names declared twice in one block of a function, and the number of declarations"""
    blocks, found, count, signature = [set()], [], 0, ""
    code = re.sub(r"/\*.*?\*/", lambda c: "\n" * c.group(0).count("\n"), code, flags=re.S)
    for line in code.split("\n"):
        line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line).split("//")[0]
        if line.lstrip().startswith("#"):
            continue
        declared = []
        if len(blocks) == 1:  # file scope: collect a function's signature up to its body's brace
            signature = signature + line if "(" in line or signature else ""
        else:
            m = DECLARATION.match(line)
            if m and not line.lstrip().startswith(("for", "return")):
                declared = [d.group(1) for d in map(DECLARATOR.match, top_level_parts(m.group(1))) if d]
        for ch in line:
            if ch == "{":
                blocks.append(set())
                if len(blocks) == 2 and ")" in signature:
                    declared = parameters(signature[:signature.rindex(")") + 1]) + declared
                    signature = ""
            elif ch == "}" and len(blocks) > 1:
                blocks.pop()
            elif ch == ";" and len(blocks) == 1:
                signature = ""
        for name in declared:
            count += 1
            if name in blocks[-1]:
                found.append(name)
            blocks[-1].add(name)
    return found, count


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    programs = declarations = 0
    bad = []
    for path in sys.argv[1:]:
        for line in open(path):
            sample = json.loads(line)
            found, count = repeats(sample["completion"])
            programs += 1
            declarations += count
            if found:
                bad.append("%s %s (%s): %s declared twice" % (path, sample["id"], sample["spec"]["family"], ", ".join(found)))
    print("\n".join(bad) or "%d programs, %d declarations, no name twice in one block" % (programs, declarations))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
