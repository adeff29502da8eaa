"""Lambda code of the ASG tag writer (`index.on_event`), shipped as an asset by asg_tags.py."""
