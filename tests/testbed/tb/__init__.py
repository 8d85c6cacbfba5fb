"""vtier testbed: image builder and runner for the L1 host VM (TCG) and L2 guests (KVM)."""
