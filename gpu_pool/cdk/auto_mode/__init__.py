"""EKS Auto Mode pools: a NodePool and NodeClass per pool, on a cluster with Auto Mode."""
