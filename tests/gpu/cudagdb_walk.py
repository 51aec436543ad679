# cuda-gdb Python: walk every CTA's warps, print each distinct PC once with its instruction and line.
import gdb

def run(cmd):
    try:
        return gdb.execute(cmd, to_string=True)
    except gdb.error as exc:
        return f"ERROR {cmd}: {exc}\n"

print("=== kernels\n" + run("info cuda kernels"))
print("=== blocks\n" + run("info cuda blocks"))
print("=== warps all\n" + run("info cuda warps device all sm all"))
print("=== lanes current\n" + run("info cuda lanes"))
