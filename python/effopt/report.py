"""The memory report of a compiled step (effc --report)."""
import json
import shutil


class MemoryReport:
    """The exact memory plan: print() shows effc's table.

    total_bytes: state + arena + io (+ library workspace), the bytes the
    runtime allocates on the device.
    host_bytes: the host region (effc --offload optimizer: the optimizer's
    state in host memory), besides; 0 without it.
    by_category: bytes by category at the peak (parameters, gradients,
    optimizer state, activations, ...).
    """

    def __init__(self, prefix):
        with open(prefix + ".json") as f:
            self._json = json.load(f)
        with open(prefix + ".txt") as f:
            self._table = f.read()
        with open(prefix + ".svg") as f:
            self._svg = f.read()

    @property
    def total_bytes(self):
        return int(self._json["total_bytes"])

    @property
    def host_bytes(self):
        return int(self._json.get("host_bytes", 0))

    @property
    def peak_bytes(self):
        return int(self._json["peak"]["bytes"])

    @property
    def by_category(self):
        return dict(self._json["peak"]["by_category"])

    @property
    def regions(self):
        return dict(self._json["regions"])

    def to_json(self):
        return json.dumps(self._json, indent=2)

    def to_dict(self):
        return json.loads(json.dumps(self._json))

    def to_svg(self, path):
        with open(path, "w") as f:
            f.write(self._svg)

    def __str__(self):
        return self._table

    def __repr__(self):
        return (f"<MemoryReport total {self.total_bytes:,} bytes, "
                f"peak {self.peak_bytes:,} bytes>")
