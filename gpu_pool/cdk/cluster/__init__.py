"""The EKS cluster: created with its VPC, or imported; and the role that verifies it from
another account."""
