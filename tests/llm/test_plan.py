"""The one plan type of grader and collection runs and its sentence (both pages show it)."""

from llm.plan import Plan


def test_a_plan_says_what_a_run_would_send_and_its_estimated_cost() -> None:
    grade = Plan("grade", items=6, cached=2, prompt_tokens=12_345, completion_tokens=900,
                 cost_usd=0.0412)
    assert grade.sentence() == ("**6** items to grade (2 answered from the cache), ≈ 12,345 "
                                "prompt tokens, ≈ $0.04 (estimate).")
    collect = Plan("collect", items=24, tasks=12, requests=30, images=90, prompt_tokens=80_000,
                   completion_tokens=9_000, cost_usd=None)
    assert collect.sentence() == ("**24** answers to collect over 12 tasks: 30 requests, 90 "
                                  "images, ≈ 80,000 prompt tokens, unknown price (estimate).")
