"""A refused repository URL says what would be accepted: the allow-list's hosts (issue 23 item 9)."""

from __future__ import annotations

from agentmate.packages.policy import NetPolicy


def test_a_host_outside_the_allow_list_is_refused_naming_the_allowed_hosts():
    policy = NetPolicy()
    problem = policy.url_problem("https://evil.example/acme/skills")
    assert problem is not None
    assert problem.startswith("host evil.example:443 is not in the allow-list")
    assert "allowed hosts: github.com, codeload.github.com, gitlab.com" in problem
    # a listed host on another port is named the same way (an entry without a port allows only the default)
    assert "allowed hosts: github.com" in (policy.url_problem("https://github.com:8443/a/b") or "")
    assert policy.url_problem("https://github.com/a/b") is None


def test_an_operator_allow_list_is_named_as_configured():
    policy = NetPolicy(allowed_hosts=("git.internal:8443", "mirror.example:*"))
    problem = policy.url_problem("https://github.com/a/b") or ""
    assert "allowed hosts: git.internal:8443, mirror.example:*" in problem
    assert "allowed hosts: none" in (NetPolicy(allowed_hosts=()).url_problem("https://github.com/a/b") or "")
