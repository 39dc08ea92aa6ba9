"""Controllers shared by the simulator and the Kubernetes mode (Volcano's vc-controller-manager)."""
