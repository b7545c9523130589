"""docs/GUIDE.md's code matches the examples: every ```cpp block must be
introduced by "From examples/NAME:" and appear in that file line for line, in
order (a block of the guide's own would compile nowhere: the README's complete
programs are built by the package test instead)."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
guide = (root / "docs/GUIDE.md").read_text().splitlines()
checked, problems = 0, []
i = 0
while i < len(guide):
    if guide[i].strip() == "```cpp":
        problems.append(f"GUIDE.md:{i + 1}: a ```cpp block not marked 'From examples/NAME:'")
        i = guide.index("```", i + 1) + 1
        continue
    m = re.fullmatch(r"From (examples/[\w.]+):", guide[i].strip())
    if not m:
        i += 1
        continue
    source = root / m.group(1)
    j = i + 1
    while j < len(guide) and guide[j].strip() == "":
        j += 1
    if j >= len(guide) or guide[j].strip() != "```cpp":
        problems.append(f"GUIDE.md:{i + 1}: 'From {m.group(1)}:' is not followed by a ```cpp block")
        i = j
        continue
    end = guide.index("```", j + 1)
    block = guide[j + 1:end]
    text = source.read_text().splitlines() if source.exists() else []
    if not source.exists():
        problems.append(f"GUIDE.md:{i + 1}: {m.group(1)} does not exist")
    elif not any(text[k:k + len(block)] == block for k in range(len(text) - len(block) + 1)):
        problems.append(f"GUIDE.md:{j + 2}: the block ({len(block)} lines) is not in {m.group(1)} as it stands")
    checked += 1
    i = end + 1

for p in problems:
    print(p)
print(f"{checked} code blocks checked against the examples, {len(problems)} out of date")
sys.exit(1 if problems or checked == 0 else 0)
