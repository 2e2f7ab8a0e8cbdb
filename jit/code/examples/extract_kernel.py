"""Print the C++ and CUDA code Warp generates for a small kernel (no GPU needed).

    python jit/code/examples/extract_kernel.py

Shows the pieces ``extract_ir`` returns: the helper function, the CPU argument struct,
and the forward and backward of each device.
"""

import sys

import warp as wp

from jit.code.extraction import extract_many


@wp.func
def smoothstep(x: float):
    t = wp.clamp(x, 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


@wp.kernel
def ease(values: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = smoothstep(values[i])


def main() -> int:
    irs = extract_many([ease])[0]  # one build serves both devices
    for device, ir in irs.items():
        print(f"// ===== {device}: {ir.mangled_name}{ir.source_ext}, block_dim {ir.metadata['options']['block_dim']}")
        print(ir.code())
    return 0


if __name__ == "__main__":
    sys.exit(main())
