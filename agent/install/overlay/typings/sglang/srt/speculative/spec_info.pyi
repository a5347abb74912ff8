from enum import Enum

class SpeculativeAlgorithm(Enum):
    NONE = ...
