"""Cost models, cheapest first: speed of light (`sol`), then projected and learned models.

Every model reads its device figures from `devices`, the one table to extend for a new GPU.
"""

from compiler.cost.devices import DEVICES, Device, get_device
from compiler.cost.sol import SolEstimate, SolModel

__all__ = ["DEVICES", "Device", "get_device", "SolEstimate", "SolModel"]
