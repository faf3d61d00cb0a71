"""template.yaml's job queue wiring, read as data: what `sam validate --lint` cannot know about our rules
(the visibility timeout against the worker's timeout, batch size 1 with partial failures, the DLQ and its
alarm, the sweep's payload, and the compiler timeout fitting inside the function)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


class _Tagged(yaml.SafeLoader):
    """CloudFormation short tags kept as {"Fn": value}: !Ref X → {"Ref": "X"}, !GetAtt A.B → {"GetAtt": "A.B"}."""


def _construct(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {suffix: value}


_Tagged.add_multi_constructor("!", _construct)
TEMPLATE = yaml.load((ROOT / "template.yaml").read_text(), Loader=_Tagged)
RESOURCES = TEMPLATE["Resources"]
PARAMS = TEMPLATE["Parameters"]
WORKER = RESOURCES["CompileWorkerFunction"]["Properties"]


def test_the_queue_s_visibility_timeout_is_at_least_six_times_the_longest_worker_timeout():
    assert WORKER["Timeout"] == {"Ref": "WorkerTimeoutSeconds"}
    longest = PARAMS["WorkerTimeoutSeconds"]["MaxValue"]
    assert longest == 900  # Lambda's maximum
    assert RESOURCES["JobsQueue"]["Properties"]["VisibilityTimeout"] >= 6 * longest


def test_the_worker_takes_one_message_at_a_time_and_reports_partial_failures():
    (sqs,) = [e["Properties"] for e in WORKER["Events"].values() if e["Type"] == "SQS"]
    assert sqs["Queue"] == {"GetAtt": "JobsQueue.Arn"}
    assert sqs["BatchSize"] == 1
    assert sqs["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    # WIKI_WORKER_CONCURRENCY's part; SQS event sources accept at least 2
    assert sqs["ScalingConfig"]["MaximumConcurrency"] == {"Ref": "WikiWorkerConcurrency"}
    assert PARAMS["WikiWorkerConcurrency"]["MinValue"] >= 2


def test_failed_wake_ups_go_to_a_dead_letter_queue_whose_depth_is_alarmed():
    redrive = RESOURCES["JobsQueue"]["Properties"]["RedrivePolicy"]
    assert redrive["deadLetterTargetArn"] == {"GetAtt": "JobsDeadLetterQueue.Arn"}
    assert 1 <= redrive["maxReceiveCount"] <= 10
    alarm = RESOURCES["JobsDeadLetterAlarm"]["Properties"]
    assert alarm["Namespace"] == "AWS/SQS" and alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": {"GetAtt": "JobsDeadLetterQueue.QueueName"}}
    ]
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)


def test_the_schedule_invokes_the_sweep_of_the_same_function():
    (schedule,) = [
        e["Properties"] for e in WORKER["Events"].values() if e["Type"] in ("Schedule", "ScheduleV2")
    ]
    assert json.loads(schedule["Input"]) == {"sweep": True}


def test_the_worker_knows_its_timeout_and_the_default_compiler_timeout_fits_inside_it():
    env = WORKER["Environment"]["Variables"]
    assert env["JOBS_FUNCTION_TIMEOUT_SECONDS"] == {"Ref": "WorkerTimeoutSeconds"}
    assert env["COMPILER_TIMEOUT_SECONDS"] == {"Ref": "CompilerTimeoutSeconds"}
    assert TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]["JOBS_QUEUE_URL"] == {
        "Ref": "JobsQueue"
    }
    assert int(env["DB_POOL_MAX_SIZE"]) >= 2  # the runner's connection and the heartbeat's
    assert env["COMPILER_API_KEY_ARN"] == {
        "If": ["HasCompilerApiKey", {"Ref": "CompilerApiKeySecretArn"}, {"Ref": "AWS::NoValue"}]
    }
    from agentmate.jobs.settings import JobSettings

    margin = JobSettings().jobs_finish_margin_seconds
    assert PARAMS["CompilerTimeoutSeconds"]["Default"] == 780
    assert PARAMS["CompilerTimeoutSeconds"]["Default"] + margin <= PARAMS["WorkerTimeoutSeconds"]["Default"]
    assert PARAMS["CompilerTimeoutSeconds"]["MaxValue"] + margin <= PARAMS["WorkerTimeoutSeconds"]["MaxValue"]


def test_the_worker_may_send_its_own_retries_and_the_vpc_endpoints_are_optional():
    assert {"SQSSendMessagePolicy": {"QueueName": {"GetAtt": "JobsQueue.QueueName"}}} in WORKER["Policies"]
    for name in ("SqsVpcEndpoint", "SecretsManagerVpcEndpoint", "VpcEndpointSecurityGroup"):
        assert RESOURCES[name]["Condition"] == "CreateEndpoints"


def test_the_functions_that_enqueue_may_send_wake_ups():
    # skills (compile backfill / index runs), knowledge (large sync/index), knowledge wiki (compile, lint,
    # review, validation sweeps), MCP (the same tools)
    send = {"SQSSendMessagePolicy": {"QueueName": {"GetAtt": "JobsQueue.QueueName"}}}
    for name in ("SkillsFunction", "KnowledgeFunction", "KnowledgeWikiFunction", "McpFunction"):
        assert send in RESOURCES[name]["Properties"]["Policies"], name


def test_the_reviewer_is_configured_like_the_compiler_with_its_key_only_in_the_worker():
    # spec/001's REVIEWER_* variables: identity for every function (enqueue classifies reviewer independence),
    # the key by Secrets Manager ARN only where the review jobs run.
    env = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert env["REVIEWER_BASE_URL"] == {
        "If": ["HasReviewerBaseUrl", {"Ref": "ReviewerBaseUrl"}, {"Ref": "AWS::NoValue"}]
    }
    assert env["REVIEWER_MODEL"] == {"Ref": "ReviewerModel"}
    assert env["REVIEWER_TEMPERATURE"] == {"Ref": "ReviewerTemperature"}
    assert "REVIEWER_API_KEY_ARN" not in env
    assert PARAMS["ReviewerModel"]["Default"] == "qwen-max" != PARAMS["CompilerModel"]["Default"]
    assert (PARAMS["ReviewerTemperature"]["Default"], PARAMS["ReviewerTemperature"]["MaxValue"]) == (0, 2)
    worker_env = WORKER["Environment"]["Variables"]
    assert worker_env["REVIEWER_API_KEY_ARN"] == {
        "If": ["HasReviewerApiKey", {"Ref": "ReviewerApiKeySecretArn"}, {"Ref": "AWS::NoValue"}]
    }
    assert {
        "If": [
            "HasReviewerApiKey",
            {"AWSSecretsManagerGetSecretValuePolicy": {"SecretArn": {"Ref": "ReviewerApiKeySecretArn"}}},
            {"Ref": "AWS::NoValue"},
        ]
    } in WORKER["Policies"]
    assert (
        PARAMS["ReviewerApiKeySecretArn"]["AllowedPattern"]
        == PARAMS["CompilerApiKeySecretArn"]["AllowedPattern"]
    )
