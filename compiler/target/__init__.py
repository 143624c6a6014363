"""What the compiler targets, below every decision it makes: the GPUs' published figures
(`devices`, the one table to extend for a new GPU), the speed of light of a kernel on them
(`sol`), occupancy (`occupancy`) and what a kernel launch costs under each runtime (`launch`).
"""

from compiler.target.devices import DEVICES, Device, get_device
from compiler.target.sol import SolEstimate, SolModel

__all__ = ["DEVICES", "Device", "get_device", "SolEstimate", "SolModel"]
