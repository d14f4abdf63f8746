"""The ``on:`` rules: GitHub Actions filter patterns, events, branches, paths, conclusions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronduit.core.matching import (
    CONCLUSIONS,
    Delivery,
    OnRule,
    PatternError,
    branches_match,
    conclusions_match,
    event_matches,
    event_name_error,
    paths_match,
    pattern_error,
    ref_names,
    rule_matches,
)


def matches(pattern: str, name: str) -> bool:
    """One pattern against one name, through the same engine as a filter of one rule."""
    return paths_match([pattern], [name])


# --- GitHub's documented path patterns ---------------------------------------------------
# docs.github.com, "Workflow syntax for GitHub Actions", section "Filter pattern cheat
# sheet", table "Patterns to match file paths": each row's example matches, plus names the
# row's description excludes.


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("*", "README.md", True),
        ("*", "server.rb", True),
        ("*", "docs/README.md", False),
        ("*.jsx?", "page.js", True),
        ("*.jsx?", "page.jsx", True),
        ("*.jsx?", "page.jsxx", False),
        ("**", "all/the/files.md", True),
        ("*.js", "app.js", True),
        ("*.js", "index.js", True),
        ("*.js", "js/index.js", False),
        ("**.js", "index.js", True),
        ("**.js", "js/index.js", True),
        ("**.js", "src/js/app.js", True),
        ("**.js", "src/js/app.json", False),
        ("docs/*", "docs/README.md", True),
        ("docs/*", "docs/file.txt", True),
        ("docs/*", "docs/mona/octocat.txt", False),
        ("docs/*", "src/docs/file.txt", False),
        ("docs/**", "docs/README.md", True),
        ("docs/**", "docs/mona/octocat.txt", True),
        ("docs/**", "src/docs/README.md", False),
        ("docs/**/*.md", "docs/README.md", True),
        ("docs/**/*.md", "docs/mona/hello-world.md", True),
        ("docs/**/*.md", "docs/a/markdown/file.md", True),
        ("docs/**/*.md", "docs/a/markdown/file.txt", False),
        ("**/docs/**", "docs/hello.md", True),
        ("**/docs/**", "dir/docs/my-file.txt", True),
        ("**/docs/**", "space/docs/plan/space.doc", True),
        ("**/docs/**", "mydocs/file.txt", False),
        ("**/README.md", "README.md", True),
        ("**/README.md", "js/README.md", True),
        ("**/README.md", "js/NOT-README.md", False),
        ("**/*src/**", "a/src/app.js", True),
        ("**/*src/**", "my-src/code/js/app.js", True),
        ("**/*src/**", "src-old/app.js", False),
        ("**/*-post.md", "my-post.md", True),
        ("**/*-post.md", "path/their-post.md", True),
        ("**/migrate-*.sql", "migrate-10909.sql", True),
        ("**/migrate-*.sql", "db/migrate-v1.0.sql", True),
        ("**/migrate-*.sql", "db/sept/migrate-v1.sql", True),
        ("**/migrate-*.sql", "db/migrate-v1.sql.bak", False),
    ],
)
def test_the_documented_path_patterns_match_as_github_says(
    pattern: str, name: str, expected: bool
) -> None:
    """Each example of GitHub's path pattern table gives GitHub's answer."""
    assert expected == matches(pattern, name)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("hello.md", True), ("README.md", False), ("docs/hello.md", False)],
)
def test_a_later_negative_pattern_excludes_a_file(name: str, expected: bool) -> None:
    """Cheat sheet row ``'*.md'``, ``'!README.md'``: the negation takes README.md back."""
    assert expected == paths_match(["*.md", "!README.md"], [name])


@pytest.mark.parametrize(
    ("name", "expected"),
    [("hello.md", True), ("README.md", True), ("README.doc", True), ("docs/hello.md", False)],
)
def test_a_positive_pattern_after_a_negation_includes_again(name: str, expected: bool) -> None:
    """Cheat sheet row ``'*.md'``, ``'!README.md'``, ``README*``: patterns are read in order."""
    assert expected == paths_match(["*.md", "!README.md", "README*"], [name])


# docs.github.com, "Workflow syntax for GitHub Actions", on.<push>.paths, "Example:
# Including and excluding paths": sub-project/** with !sub-project/docs/**.


def test_a_change_inside_an_included_folder_matches() -> None:
    """A push changing ``sub-project/index.js`` or ``sub-project/src/index.js`` runs."""
    rules = ["sub-project/**", "!sub-project/docs/**"]
    assert paths_match(rules, ["sub-project/index.js"])
    assert paths_match(rules, ["sub-project/src/index.js"])


def test_a_change_only_inside_the_excluded_subfolder_does_not_match() -> None:
    """A push changing only ``sub-project/docs/readme.md`` does not run."""
    assert not paths_match(
        ["sub-project/**", "!sub-project/docs/**"], ["sub-project/docs/readme.md"]
    )


def test_one_included_file_is_enough_even_beside_excluded_ones() -> None:
    """The event matches when at least one changed file is included."""
    files = ["sub-project/docs/readme.md", "sub-project/app.js"]
    assert paths_match(["sub-project/**", "!sub-project/docs/**"], files)


def test_the_order_of_rules_decides_between_include_and_exclude() -> None:
    """``!**/*.md`` after ``**`` excludes Markdown; the reverse order includes everything."""
    assert not paths_match(["**", "!**/*.md"], ["docs/guide.md"])
    assert paths_match(["**", "!**/*.md"], ["docs/guide.md", "src/app.py"])
    assert paths_match(["!**/*.md", "**"], ["docs/guide.md"])


# docs.github.com, "Workflow syntax for GitHub Actions", on.<push>.paths, "Example:
# Including paths": '**.js' runs whenever a JavaScript file is pushed.


def test_any_pushed_javascript_file_matches_the_include_example() -> None:
    """``'**.js'`` matches a push that changed a .js file anywhere, and nothing else."""
    assert paths_match(["**.js"], ["README.md", "web/app/main.js"])
    assert not paths_match(["**.js"], ["README.md", "web/app/main.ts"])


def test_the_config_example_filter_excludes_the_posted_ledger() -> None:
    """SPEC §1 ``post`` job: a change to posted.json alone does not start it."""
    rules = ["data/reels/*.json", "!data/reels/posted.json"]
    assert paths_match(rules, ["data/reels/42.json"])
    assert not paths_match(rules, ["data/reels/posted.json"])
    assert not paths_match(rules, ["data/reels/old/42.json"])


# --- unknown and empty file lists ---------------------------------------------------------


def test_an_unknown_file_list_matches_a_path_filter() -> None:
    """A missing or truncated list runs the job rather than skipping it on partial news."""
    assert paths_match(["docs/**"], None)


def test_an_unknown_file_list_matches_even_a_filter_that_only_excludes() -> None:
    """With no list to check, the filter is not consulted at all."""
    assert paths_match(["**", "!**"], None)


def test_an_empty_changed_list_does_not_match_a_path_filter() -> None:
    """A push that changed no file includes nothing, so a path-filtered job does not run."""
    assert not paths_match(["**"], [])


def test_an_empty_path_filter_matches_everything() -> None:
    """No paths listed means no path condition, even for an empty or unknown list."""
    assert paths_match([], [])
    assert paths_match([], ["a/b.c"])
    assert paths_match([], None)


def test_a_filter_of_only_negations_includes_nothing() -> None:
    """Without a positive rule nothing is ever included, as in GitHub."""
    assert not paths_match(["!docs/**"], ["src/app.py"])


# --- GitHub's documented branch patterns -------------------------------------------------
# docs.github.com, "Workflow syntax for GitHub Actions", section "Filter pattern cheat
# sheet", table "Patterns to match branches and tags".


@pytest.mark.parametrize(
    ("pattern", "branch", "expected"),
    [
        ("feature/*", "feature/my-branch", True),
        ("feature/*", "feature/your-branch", True),
        ("feature/*", "feature/beta-a/my-branch", False),
        ("feature/**", "feature/beta-a/my-branch", True),
        ("feature/**", "feature/your-branch", True),
        ("feature/**", "feature/mona/the/octocat", True),
        ("feature/**", "features/x", False),
        ("main", "main", True),
        ("main", "main2", False),
        ("main", "Main", False),
        ("releases/mona-the-octocat", "releases/mona-the-octocat", True),
        ("*", "main", True),
        ("*", "releases", True),
        ("*", "releases/v1", False),
        ("**", "all/the/branches", True),
        ("**", "every/tag", True),
        ("*feature", "mona-feature", True),
        ("*feature", "feature", True),
        ("*feature", "ver-10-feature", True),
        ("*feature", "feature-x", False),
        ("v2*", "v2", True),
        ("v2*", "v2.0", True),
        ("v2*", "v2.9", True),
        ("v2*", "v3", False),
        ("v[12].[0-9]+.[0-9]+", "v1.10.1", True),
        ("v[12].[0-9]+.[0-9]+", "v2.0.0", True),
        ("v[12].[0-9]+.[0-9]+", "v3.0.0", False),
        ("v[12].[0-9]+.[0-9]+", "v2.0", False),
        ("v[12].[0-9]+.[0-9]+", "v2x0x0", False),
    ],
)
def test_the_documented_branch_patterns_match_as_github_says(
    pattern: str, branch: str, expected: bool
) -> None:
    """Each example of GitHub's branch pattern table gives GitHub's answer."""
    assert expected == branches_match([pattern], branch)


# docs.github.com, "Workflow syntax for GitHub Actions", on.<push>.<branches|tags>,
# "Example: Including and excluding branches and tags": releases/** with !releases/**-alpha.


@pytest.mark.parametrize(
    ("branch", "expected"),
    [
        ("releases/10", True),
        ("releases/beta/mona", True),
        ("releases/10-alpha", False),
        ("releases/beta/3-alpha", False),
        ("main", False),
    ],
)
def test_a_negated_branch_pattern_takes_back_prerelease_branches(
    branch: str, expected: bool
) -> None:
    """``releases/**`` then ``!releases/**-alpha`` runs for releases except the alphas."""
    assert expected == branches_match(["releases/**", "!releases/**-alpha"], branch)


def test_an_empty_branch_filter_matches_any_branch_and_none() -> None:
    """No branches listed means no branch condition."""
    assert branches_match([], "main")
    assert branches_match([], None)


def test_a_delivery_without_a_branch_never_matches_a_branch_filter() -> None:
    """A fork's check suite or a tag push cannot be vouched for by branch name."""
    assert not branches_match(["**"], None)


# --- pattern syntax -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("a\\*b", "a*b", True),
        ("a\\*b", "axb", False),
        ("c\\+\\+", "c++", True),
        ("c\\+\\+", "ccc", False),
        ("what\\?", "what?", True),
        ("what\\?", "wha", False),
        ("\\!important", "!important", True),
        ("\\[draft]", "[draft]", True),
        ("a\\\\b", "a\\b", True),
        ("v1.0", "v1x0", False),
        ("(a|b)", "(a|b)", True),
        ("(a|b)", "a", False),
        ("x{2}", "x{2}", True),
        ("^main$", "^main$", True),
        ("feature/a!b", "feature/a!b", True),
    ],
)
def test_backslash_escapes_and_regex_characters_are_literal(
    pattern: str, name: str, expected: bool
) -> None:
    """``\\`` makes a special character literal; regex syntax outside the dialect is plain text."""
    assert expected == matches(pattern, name)


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("[CB]at", "Cat", True),
        ("[CB]at", "Bat", True),
        ("[CB]at", "Hat", False),
        ("[1-2]00", "100", True),
        ("[1-2]00", "200", True),
        ("[1-2]00", "300", False),
        ("[0-9a-z]", "7", True),
        ("[0-9a-z]", "q", True),
        ("[0-9a-z]", "Q", False),
        ("[ab]+", "abba", True),
        ("[ab]?c", "c", True),
        ("colou?r", "color", True),
        ("colou?r", "colour", True),
        ("go+gle", "gooogle", True),
        ("go+gle", "ggle", False),
    ],
)
def test_sets_and_quantifiers_act_on_one_character(pattern: str, name: str, expected: bool) -> None:
    """``[...]`` is one character; ``?`` and ``+`` apply to the character or set before them."""
    assert expected == matches(pattern, name)


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("", "a pattern cannot be empty"),
        ("!", "a pattern cannot be empty"),
        ("?x", "? at position 0 follows no character"),
        ("!+x", "+ at position 1 follows no character"),
        ("a*+", "+ at position 2 follows no character"),
        ("a**?", "? at position 3 follows no character"),
        ("a+?", "? at position 2 follows no character"),
        ("[ab", "[ at position 0 has no closing ]"),
        ("[]", "[] at position 0: a set lists letters, digits and ranges"),
        ("[._-]", "[._-] at position 0: a set lists letters, digits and ranges"),
        ("[^a]", "[^a] at position 0: a set lists letters, digits and ranges"),
        ("[a-Z]", "[a-Z] at position 0: a set lists letters, digits and ranges"),
        ("x[9-0]", "[9-0] at position 1: range 9-0 is reversed"),
        ("trailing\\", "a pattern cannot end with \\"),
    ],
)
def test_a_malformed_pattern_is_refused_with_its_position(pattern: str, problem: str) -> None:
    """Patterns GitHub's dialect cannot read are refused at validation, saying where."""
    message = pattern_error(pattern)
    assert message is not None
    assert message.startswith(problem)


def test_a_malformed_pattern_raises_when_matched() -> None:
    """Matching never guesses at a pattern that validation would have refused."""
    with pytest.raises(PatternError):
        paths_match(["[oops"], ["a"])


def test_a_valid_pattern_has_no_error() -> None:
    """Every documented example is a valid pattern."""
    assert pattern_error("v[12].[0-9]+.[0-9]+") is None
    assert pattern_error("!**/*.md") is None


_LITERAL = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="*?+[]\\!"), min_size=1, max_size=30
)


@given(_LITERAL, _LITERAL)
def test_a_pattern_without_special_characters_matches_only_itself(pattern: str, name: str) -> None:
    """Plain names are exact matches, whatever regex characters they contain."""
    expected = pattern == name
    assert expected == matches(pattern, name)


@given(st.lists(_LITERAL, min_size=1, max_size=5))
def test_the_double_star_matches_every_path(files: list[str]) -> None:
    """``**`` is GitHub's default path filter: every change passes it."""
    assert paths_match(["**"], files)


@given(_LITERAL)
def test_a_negation_after_an_identical_inclusion_takes_it_back(name: str) -> None:
    """The last matching rule wins, so ``x`` then ``!x`` excludes ``x``."""
    assert not paths_match([name, f"!{name}"], [name])
    assert paths_match([f"!{name}", name], [name])


# --- events --------------------------------------------------------------------------------


def test_an_event_without_action_matches_any_action() -> None:
    """``release`` takes a published release as well as an edited one."""
    assert event_matches(["release"], "release", "published")
    assert event_matches(["release"], "release", "edited")
    assert event_matches(["push"], "push", None)


def test_an_event_with_action_matches_only_that_action() -> None:
    """``check_suite.completed`` ignores the ``requested`` half of the same event."""
    assert event_matches(["check_suite.completed"], "check_suite", "completed")
    assert not event_matches(["check_suite.completed"], "check_suite", "requested")
    assert not event_matches(["check_suite.completed"], "check_suite", None)


def test_event_names_compare_exactly() -> None:
    """Names are compared as GitHub sends them: no case folding, no prefixes."""
    assert not event_matches(["Push"], "push", None)
    assert not event_matches(["check"], "check_suite", "completed")
    assert not event_matches(["check_suite.Completed"], "check_suite", "completed")


def test_any_listed_event_is_enough() -> None:
    """A job may listen to several events."""
    names = ["push", "release.published"]
    assert event_matches(names, "release", "published")
    assert not event_matches(names, "release", "deleted")
    assert not event_matches([], "push", None)


@pytest.mark.parametrize("name", ["push", "release.published", "check_run.completed"])
def test_event_names_in_github_form_are_valid(name: str) -> None:
    """An event, optionally with one action, in GitHub's snake case."""
    assert event_name_error(name) is None


@pytest.mark.parametrize("name", ["", "Push", "push.", ".push", "a.b.c", "check-suite"])
def test_malformed_event_names_are_refused(name: str) -> None:
    """A name GitHub never sends could never match, so it is a config error."""
    assert event_name_error(name) is not None


# --- refs ----------------------------------------------------------------------------------


def test_a_branch_ref_names_its_branch() -> None:
    """``refs/heads/`` is stripped and the rest, slashes included, is the branch."""
    expected = ("feature/a/b", None)
    assert expected == ref_names("refs/heads/feature/a/b")


def test_a_tag_ref_names_a_tag_and_no_branch() -> None:
    """Tags are not branches, so a tag push cannot pass a branch filter."""
    expected = (None, "v1.2.0")
    assert expected == ref_names("refs/tags/v1.2.0")


def test_another_ref_names_neither() -> None:
    """Notes, pull refs and the like are neither branches nor tags."""
    expected = (None, None)
    assert expected == ref_names("refs/notes/commits")


# --- whole rules ---------------------------------------------------------------------------

POST = OnRule(
    events=("push",),
    branches=("main",),
    paths=("data/reels/*.json", "!data/reels/posted.json"),
)
RED_MAIN = OnRule(
    events=("check_suite.completed",),
    branches=("main",),
    conclusions=("failure", "timed_out"),
)


def push(
    branch: str | None = "main",
    files: tuple[str, ...] | None = ("data/reels/1.json",),
    *,
    tag: str | None = None,
    deleted: bool = False,
) -> Delivery:
    """A push delivery with the fields the rules look at."""
    return Delivery("push", None, branch=branch, tag=tag, deleted=deleted, files=files)


def check_suite(conclusion: str | None, branch: str | None = "main") -> Delivery:
    """A finished check suite: a head branch and a conclusion, no file list."""
    return Delivery("check_suite", "completed", branch=branch, conclusion=conclusion)


def test_a_push_to_the_branch_changing_a_listed_file_matches() -> None:
    """Every filter agrees, so the job runs."""
    assert rule_matches(POST, push())


def test_a_push_to_another_branch_does_not_match() -> None:
    """The branch filter alone can refuse."""
    assert not rule_matches(POST, push(branch="dev"))


def test_a_push_changing_only_excluded_files_does_not_match() -> None:
    """The path filter alone can refuse."""
    assert not rule_matches(POST, push(files=("data/reels/posted.json",)))


def test_a_push_with_an_unknown_file_list_matches_a_path_filtered_rule() -> None:
    """A truncated list runs the job: a missed run is worse than an extra one."""
    assert rule_matches(POST, push(files=None))


def test_a_push_with_an_empty_file_list_does_not_match_a_path_filtered_rule() -> None:
    """A known empty list includes nothing."""
    assert not rule_matches(POST, push(files=()))


def test_a_deleted_branch_triggers_nothing() -> None:
    """Deleting ``main`` is not new code on ``main``, even with no filters at all."""
    assert not rule_matches(POST, push(deleted=True))
    assert not rule_matches(OnRule(events=("push",)), push(deleted=True, files=None))


def test_a_deleted_tag_triggers_nothing() -> None:
    """Deleting a tag is no release either."""
    assert not rule_matches(OnRule(events=("push",)), push(None, None, tag="v1", deleted=True))


def test_a_tag_push_does_not_pass_a_branch_filter() -> None:
    """A tag has no branch, so ``branches: [main]`` refuses it."""
    assert not rule_matches(POST, push(None, None, tag="v1.0.0"))


def test_a_tag_push_matches_a_rule_without_branch_filter() -> None:
    """A job listening to pushes with no branch filter sees tag pushes too."""
    assert rule_matches(OnRule(events=("push",)), push(None, None, tag="v1.0.0"))


def test_a_tag_push_is_not_held_to_path_filters() -> None:
    """As in GitHub Actions, path filters are not evaluated for tag pushes."""
    rule = OnRule(events=("push",), paths=("docs/**",))
    assert rule_matches(rule, push(None, (), tag="v1.0.0"))


def test_a_failed_check_suite_on_main_matches() -> None:
    """SPEC §1 ``red-main`` job: a failure on main starts it."""
    assert rule_matches(RED_MAIN, check_suite("failure"))
    assert rule_matches(RED_MAIN, check_suite("timed_out"))


def test_a_successful_check_suite_does_not_match_a_failure_rule() -> None:
    """Only the listed conclusions count."""
    assert not rule_matches(RED_MAIN, check_suite("success"))


def test_conclusions_compare_without_case() -> None:
    """``FAILURE`` from a delivery counts as ``failure``."""
    assert rule_matches(RED_MAIN, check_suite("FAILURE"))
    assert conclusions_match(["timed_out"], "Timed_Out")


def test_an_event_without_conclusion_never_matches_a_rule_listing_some() -> None:
    """A check suite with no conclusion yet, or a push, cannot satisfy ``conclusions``."""
    assert not rule_matches(RED_MAIN, check_suite(None))
    assert not conclusions_match(["success"], None)


def test_a_rule_without_conclusions_matches_with_or_without_one() -> None:
    """No conclusions listed means no conclusion condition."""
    assert conclusions_match([], None)
    assert conclusions_match([], "failure")


def test_a_check_suite_from_a_fork_without_branch_does_not_match_a_branch_filter() -> None:
    """A head branch we cannot vouch for is no branch at all."""
    assert not rule_matches(RED_MAIN, check_suite("failure", branch=None))


def test_a_check_suite_requested_does_not_match_a_completed_rule() -> None:
    """The action named in the rule must be the delivery's."""
    requested = Delivery("check_suite", "requested", branch="main", conclusion="failure")
    assert not rule_matches(RED_MAIN, requested)


def test_the_wrong_event_does_not_match() -> None:
    """A push is not a check suite, whatever else it carries."""
    assert not rule_matches(RED_MAIN, Delivery("push", None, branch="main", conclusion="failure"))


def test_conclusions_are_the_documented_set() -> None:
    """Config validation and matching share one list of allowed conclusions."""
    expected = {
        "success",
        "failure",
        "neutral",
        "cancelled",
        "skipped",
        "timed_out",
        "action_required",
        "stale",
        "startup_failure",
    }
    assert expected == CONCLUSIONS


def test_an_on_rule_refuses_an_unknown_conclusion() -> None:
    """A rule that exists can be evaluated; an unknown conclusion would never match."""
    with pytest.raises(ValueError, match="unknown conclusions"):
        OnRule(events=("check_suite.completed",), conclusions=("failed",))


def test_an_on_rule_refuses_a_malformed_pattern() -> None:
    """Patterns compile when the rule is built, not at the first delivery."""
    with pytest.raises(PatternError):
        OnRule(events=("push",), paths=("[x",))


def test_a_delivery_cannot_name_both_a_branch_and_a_tag() -> None:
    """A ref is one or the other; both means the payload was misread."""
    with pytest.raises(ValueError, match="branch or a tag"):
        Delivery("push", None, branch="main", tag="v1")
