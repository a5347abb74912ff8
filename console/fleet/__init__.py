"""Several hosts in one console: targets, the Fleet screen and its model, the change asked of many hosts."""
