"""The modules shipped with runledger, each folder a manifest beside its code."""
