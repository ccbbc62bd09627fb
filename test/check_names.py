"""Every corpus program declares each name once per block of main().

usage: check_names.py CORPUS.jsonl...

A second declaration of a name in one block does not compile (conv2d's output height out_h
beside its output's host buffer out_h in the x_h naming style did, in 1 of 2,000 training
programs of the default corpus). An independent reading of the text, not of the generator's
tables: declarations are the statements of main() that start with a type, their names the
top-level declarators; braces open and close blocks; for-loop headers are their own scope.
Prints the programs and declarations read; exits 1 naming each program with a repeat.
"""
import json
import re
import sys

TYPE = (r"(?:(?:const|static|constexpr|unsigned)\s+)*"
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


def repeats(code):
    """the names declared twice in one block of main(), and the number of declarations"""
    start = code.find("int main(")
    if start < 0:
        return [], 0
    blocks, found, count = [set()], [], 0
    for line in code[start:].split("\n")[1:]:
        line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line).split("//")[0]
        m = DECLARATION.match(line)
        if m and not line.lstrip().startswith(("for", "return")):
            for part in top_level_parts(m.group(1)):
                name = DECLARATOR.match(part)
                if not name:
                    continue
                count += 1
                if name.group(1) in blocks[-1]:
                    found.append(name.group(1))
                blocks[-1].add(name.group(1))
        for ch in line:
            if ch == "{":
                blocks.append(set())
            elif ch == "}" and len(blocks) > 1:
                blocks.pop()
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
    print("\n".join(bad) or "%d programs, %d declarations in main, no name twice in one block" % (programs, declarations))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
