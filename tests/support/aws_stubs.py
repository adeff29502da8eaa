"""boto3 clients with scripted answers (botocore's Stubber checks each request against the
service model), and AWS objects as the APIs return them."""

import boto3
from botocore.stub import Stubber


def stubbed(service, responses):
    aws_client = boto3.client(
        service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(aws_client)
    for method, response, params in responses:
        stubber.add_response(method, response, params)
    stubber.activate()
    return aws_client


def asg_group(name, tags):
    """An Auto Scaling group as DescribeAutoScalingGroups returns it (None: no Tags key)."""
    group = {
        "AutoScalingGroupName": name,
        "MinSize": 0,
        "MaxSize": 8,
        "DesiredCapacity": 0,
        "DefaultCooldown": 300,
        "AvailabilityZones": ["us-east-1a"],
        "HealthCheckType": "EC2",
        "CreatedTime": "2026-12-01T00:00:00Z",
    }
    if tags is not None:
        group["Tags"] = [{"Key": k, "Value": v} for k, v in tags.items()]
    return group
