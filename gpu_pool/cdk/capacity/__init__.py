"""Training capacity: reservations (Capacity Blocks and ODCRs, as EC2 describes them) and EFA."""
