#!/usr/bin/env python3
"""Checks a cuda .effx against docs/CudaBackend.md: prints one line per
finding for FileCheck.

    check_cuda_effx.py MODEL.effx --bin BUILD/bin --report REPORT.json \\
        --allowed Inputs/host-imports.txt

- the manifest names the target, its archs, PTX, workspace and TF32 choice;
- every state, input, loss and arena offset (the memory report's buffers)
  is a multiple of 256, and the report counts the cuBLASLt workspace;
- the host shared object imports only the symbols `--allowed` lists.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("effx")
    ap.add_argument("--bin", required=True)
    ap.add_argument("--report")
    ap.add_argument("--allowed", required=True)
    args = ap.parse_args()
    inspect = os.path.join(args.bin, "effrt-inspect")
    with tempfile.TemporaryDirectory() as tmp:
        manifest_path = os.path.join(tmp, "manifest.json")
        host = os.path.join(tmp, "step.so")
        subprocess.check_call([inspect, "--extract-section",
                               "manifest:-:manifest", manifest_path, args.effx])
        subprocess.check_call([inspect, "--extract-section",
                               "host_code:cuda:step", host, args.effx])
        with open(manifest_path) as f:
            m = json.load(f)
        print("target", m["target"])
        print("cuda_archs", ",".join(m["cuda_archs"]))
        print("cuda_ptx", m["cuda_ptx"])
        print("workspace_bytes", m["workspace_bytes"])
        print("allow_tf32", str(m["allow_tf32"]).lower())
        print("host_cpu", m["host_cpu"])
        offsets = [("state " + t["name"], t["offset"]) for t in m["state"]]
        offsets += [("input " + t["name"], t["offset"]) for t in m["inputs"]]
        offsets.append(("loss", m["loss"]["offset"]))
        regions = m["regions"]
        offsets += [("region " + k, v) for k, v in regions.items()]
        if args.report:
            with open(args.report) as f:
                report = json.load(f)
            offsets += [("arena buffer " + b["node"], b["offset"])
                        for b in report["buffers"]]
            print("report workspace",
                  report["peak"]["by_category"]["workspace"],
                  "regions.workspace", report["regions"].get("workspace"))
            print("report total == state+arena+io+workspace",
                  report["total_bytes"] == regions["state"] + regions["arena"]
                  + regions["io"] + m["workspace_bytes"])
        bad = [(n, o) for n, o in offsets if o % 256]
        print("offsets checked", len(offsets) > 10, "misaligned", len(bad))
        for n, o in bad:
            print("MISALIGNED", n, o)
        nm = subprocess.run(["nm", "-D", "--undefined-only", host],
                            check=True, capture_output=True, text=True)
        imported = sorted(line.split()[-1] for line in nm.stdout.splitlines()
                          if line.strip())
        with open(args.allowed) as f:
            allowed = {line.split("#")[0].strip() for line in f} - {""}
        undocumented = [sym for sym in imported if sym not in allowed]
        for sym in imported:
            print("import", sym, "ok" if sym in allowed else "UNDOCUMENTED")
        print("undocumented imports:", len(undocumented), *undocumented)
    return 0


if __name__ == "__main__":
    sys.exit(main())
