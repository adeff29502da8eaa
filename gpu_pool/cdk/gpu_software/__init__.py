"""What runs on the GPU nodes besides the pods: device plugin and GPU Operator charts, the
NVIDIA and EFA DRA drivers, GPU metrics and the node monitoring agent repair acts on."""
