"""The anchors: Prometheus and Alertmanager running the public Kafka rule sets of ``conf/anchors/`` beside planewatch.

``stacks`` says what each rule set's stack looks like (scrape and evaluation intervals, target labels) and writes the
configuration files (pure); ``servers`` starts Alertmanager and one Prometheus per stack on 127.0.0.1; ``watch``
follows the demo's running cluster into the Prometheus targets and records when each anchor alert became readable in
Alertmanager; ``score`` sets the anchors' detections beside planewatch's (pure); ``pager`` is a webhook receiver that
counts Alertmanager's notifications (pages); ``restart_rules`` reads the truth about restarting a node through a second
Admin client and models Strimzi's and Redpanda's restart rules from their source.
"""
