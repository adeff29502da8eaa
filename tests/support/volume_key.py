"""The grant a customer-managed volume key gives the Auto Scaling service-linked role, written
from the Auto Scaling user guide ("Required AWS KMS key policy for use with encrypted volumes",
Example 2: `aws kms create-grant --operations ...`), independently of
gpu_pool/model/volume_keys.py, for the tests that hold the template and the IAM simulation to it."""

GUIDE_GRANT_OPERATIONS = (
    "Encrypt",
    "Decrypt",
    "ReEncryptFrom",
    "ReEncryptTo",
    "GenerateDataKey",
    "GenerateDataKeyWithoutPlaintext",
    "DescribeKey",
    "CreateGrant",
)
