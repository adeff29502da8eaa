"""The context lookups the CDK CLI caches in cdk.context.json, and the facts a synth could not
check."""
