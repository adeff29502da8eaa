"""What every pool's nodes are given: their IAM role and the grant of their volumes' key."""
