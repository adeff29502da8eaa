"""The rules layer: every known way a GPU pool fails, found from settings and plans alone.

No CDK here: each rule returns Findings (model/findings.py); the constructs report them.
"""
