"""Parses an OpenMetrics exposition with the reference Python client's parser
(prometheus_client) and prints every sample as JSON lines: name, labels, value.
A parse error exits non-zero with the parser's message."""

import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families

text = sys.stdin.read()
for family in text_string_to_metric_families(text):
    for s in family.samples:
        print(json.dumps({"family": family.name, "type": family.type, "name": s.name, "labels": s.labels, "value": s.value}))
