"""The cluster's network: the private subnets pools go into, by zone, and a node-only subnet
per Local Zone."""
