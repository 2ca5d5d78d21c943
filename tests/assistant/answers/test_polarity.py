"""Polarity read from what a text says, not from code's values or names: Python's `None` (`-> None`, `is not None`)
and the "Not" of a name ("405 Method Not Allowed") are no "no", while prose's "None of …" and "not" still are."""

from __future__ import annotations

from assistant.answers.support import support
from assistant.answers.text_units import negated, said_no

LOADER_CHUNK = ('class DispatchingJinjaLoader(BaseLoader):\n    """A loader that looks for templates in the application and all\n'
                '    the blueprint folders.\n    """\ndef __init__(self, app: App) -> None:\n        self.app = app')


def test_code_s_none_is_a_value_not_a_negation() -> None:
    for code in ("def __init__(self, app: App) -> None", "if loader is not None", "self.x = None", "return None",
                 "value is None", "f(None, 2)"):
        assert not negated(code), code
    for prose in ("None of the rooms are free", "None.", "There is no fee", "The loader is not used"):
        assert negated(prose), prose


def test_a_claim_against_code_that_returns_none_is_not_contradicted() -> None:
    claim = "DispatchingJinjaLoader searches the template folders of the app and its blueprints."
    found = support(claim, LOADER_CHUNK, "templating.py — src/flask/templating.py:53-66\nSymbol: DispatchingJinjaLoader")
    assert not found.contradicted
    # the opposite said in the docstring's prose still is one
    against = support("DispatchingJinjaLoader does not look for templates in the blueprint folders.", LOADER_CHUNK)
    assert against.contradicted and not against.supported


def test_not_inside_a_name_is_no_negation() -> None:
    for name in ("a request with another method gets 405 Method Not Allowed.", "Flask returns 404 Not Found.",
                 "The page shows “Not Found”.", "Set your status to Do Not Disturb."):
        assert not negated(name), name
    for prose in ("Not all users can delete messages.", "The user does NOT get access.", "It is not Allowed by policy."):
        assert negated(prose), prose
    source = ("def add_url_rule(self, rule, endpoint=None, view_func=None, **options):\n    \"\"\"Register a rule for "
              "routing incoming requests. The methods argument defaults to GET; a request with another method gets 405 "
              "Method Not Allowed.\"\"\"")
    found = support("A request to the orders route gets a 405 because the methods argument of the rule defaults to GET.",
                    source)
    assert found.supported and not found.contradicted


def test_a_bound_agrees_with_the_value_it_limits_and_not_with_the_opposite_comparison() -> None:
    """"RTO 不超过 4 小时" and "RTO 目标是 4 小时" say the same; "超过 5000 元" against "不超过 5000 元" does not."""
    source = "目标是 RPO 不超过 24 小时，RTO 不超过 4 小时。"
    assert support("RTO 目标是 4 小时。", source).supported
    approval = "金额不超过 5000 元由 manager 审批。"
    assert support("金额超过 5000 元由 manager 审批。", approval).contradicted
    stay = "A stay in a hotel must not exceed 30 days."
    assert support("A stay in a hotel is 30 days at most.", stay).supported
    assert support("A stay in a hotel must exceed 30 days.", stay).contradicted


def test_a_sentence_that_says_the_claim_in_two_clauses_does_not_contradict_it() -> None:
    """"春节前一周和年底最后两周是发布冻结期，除紧急安全修复外不发布新版本": the weeks in one clause, the "no release" in the next.
    A "no" that joins them is what the sentence says; a "yes", or a "no" to what the matched clause states, is still
    the opposite."""
    freeze = "## 冻结期\n\n春节前一周和年底最后两周是发布冻结期（code freeze），除紧急安全修复外不发布新版本。"
    for claim in ("春节前一周和年底最后两周不允许发布新版本。", "不允许发布新版本的日期是春节前一周和年底最后两周。"):
        check = support(claim, freeze)
        assert check.supported and not check.contradicted, claim
    interns = "Interns do not get vacation days, but they get sick leave."
    assert support("Interns get vacation days.", interns).contradicted
    assert support("Interns get sick leave.", interns).supported
    assert support("Interns don't get sick leave.", interns).contradicted
    assert support("周末可以发布新版本。", "周末是发布冻结期，不发布新版本。").contradicted
    assert support("Contractors in Chicago get paid leave.",
                   "Contractors do not get paid leave, but Chicago staff get paid leave.").contradicted


def test_a_yes_to_what_the_next_clause_of_its_sentence_says_no_to_is_the_opposite() -> None:
    """The claim matches the clause that names the weeks, and that clause says neither yes nor no: the "no release"
    is in the next clause of the same sentence. A "no" there to something the claim does not state leaves it
    supported."""
    freeze = "## 冻结期\n\n春节前一周和年底最后两周是发布冻结期（code freeze），除紧急安全修复外不发布新版本。"
    for claim in ("春节前一周可以发布新版本。", "年底最后两周可以发布新版本。"):
        check = support(claim, freeze)
        assert check.contradicted and not check.supported, claim
    assert support("春节前一周和年底最后两周是发布冻结期。", freeze).supported
    kit = "GSA IT provides a monitor, but it does not provide a keyboard."
    assert support("GSA IT provides a monitor and a keyboard.", kit).contradicted
    assert support("GSA IT provides a monitor.", kit).supported
    cities = "出差住宿：一线城市每晚 800 元，其他城市不超过 500 元。"
    assert support("一线城市每晚住宿 800 元。", cities).supported


def test_what_there_is_no_of_is_the_thing_and_a_condition_after_as_long_as_is_a_condition() -> None:
    """没有 is one cue ("there is no"): what it says no to is 残留模块, not 有残留模块, so that a yes to the thing is read
    against it. "as long as" opens a condition as "if" does: its "don't" says when, not what."""
    assert said_no("确认没有残留模块。") == "残留模块。"
    unload = "驱动卸载以后，没有残留的内核模块。"
    assert support("驱动卸载以后可以残留内核模块。", unload).contradicted
    assert support("驱动卸载以后没有残留的内核模块。", unload).supported
    figma = "Figma plugins are okay to use and don't require approval as long as they don't integrate with other SaaS products."
    assert support("Figma plugins require approval as long as they don't integrate with other SaaS products.",
                   figma).contradicted
    assert support("Figma plugins don't require approval as long as they don't integrate with other SaaS products.",
                   figma).supported


def test_a_no_said_of_another_subject_or_asked_or_instead_is_no_opposite() -> None:
    """A "no" in the source's sentence that is another subject's, a question put in the sentence, or the other
    half of "A instead of B", says nothing against a claim that says yes; and a claim that states a rule's other
    case (both its statement and its condition turned) does not contradict it."""
    supported = [
        ("Full-time staff get a phone.", "Full-time staff get a laptop and a phone, while contractors get no phone."),
        ("Admins can export data.", "Admins can delete projects and export data, but viewers cannot export data."),
        ("The Pro plan includes audit logs.", "The Pro plan includes SSO and audit logs, while the Free plan has no "
                                              "audit logs."),
        ("工作日晚上可以部署到预发环境。", "工作日晚上可以部署，周末不部署到预发环境。"),
        ("The stipend covers phone bills.", "The stipend covers internet and phone bills, but not phones."),
        ("Urgent tickets are triaged within 4 hours.", "Tickets are triaged within 4 hours, whether or not they "
                                                       "are urgent."),
        ("站会上每人说明今天的计划和阻碍。", "站会上每人说明今天的计划，以及有没有阻碍。"),
        ("Backups are stored in S3 rather than on local disk.", "Backups run nightly and are stored in S3, not on "
                                                                "local disk."),
        ("Staff sign in with Okta instead of passwords.", "Staff sign in with Okta, not with passwords."),
        ("实习生没有带薪年假。", "实习生享有带薪病假，但没有带薪年假。"),
        ("You can use the VPN as long as your laptop is not jailbroken.", "You cannot use the VPN if your laptop "
                                                                          "is jailbroken."),
        ("只要经理批准，员工可以远程办公。", "员工不可以远程办公，除非经理批准。"),
        ("员工只要没有违规就可以保留电脑。", "员工如果违规，不可以保留电脑。"),
    ]
    contradicted = [
        ("Contractors in Chicago get paid leave.", "Contractors do not get paid leave, but Chicago staff get paid "
                                                   "leave."),
        ("只要经理批准，员工就不可以远程办公。", "只要经理批准，员工就可以远程办公。"),
        ("只要求提供发票即可报销。", "报销不要求提供发票。"),
    ]
    assert_verdicts(supported, contradicted)


def test_a_no_said_of_the_claims_own_subject_or_by_a_word_that_only_looks_asked_is_still_the_opposite() -> None:
    """The narrowing above must not hide the contradictions it was not about: a "no" of the very subject the claim
    names (after "currently", in a list), of all of them, a cannot after a word that ends in 能 (功能不能), a "no"
    beside a question put in the sentence, the condition "unless" (if not), a negated condition said in other
    words, and a claim's own "except" that is no opposite."""
    contradicted = [
        ("The mobile app supports SSO.", "The web app supports SSO and SCIM, but the mobile app currently does not "
                                         "support SSO."),
        ("实习生可以使用 VPN。", "正式员工可以使用 VPN 和内部 wiki，外包人员和实习生都不能使用 VPN。"),
        ("All users can export data.", "Admins can delete projects and export data, but viewers cannot export data."),
        ("导出功能可以在免费版使用。", "导出功能不能在免费版使用。"),
        ("差旅费用需要提前审批。", "差旅费用不用提前审批。"),
        ("紧急修复可以跳过代码审查。", "不管是不是紧急修复都不能跳过代码审查。"),
        ("You can use the VPN if your laptop is not enrolled in MDM.", "You cannot use the VPN unless your laptop "
                                                                       "is enrolled in MDM."),
        ("You can deploy if the change has not been reviewed.", "You cannot deploy if the change is unreviewed."),
        ("Interns do not get sick leave or vacation days.", "Interns get sick leave, but no vacation days."),
    ]
    supported = [("Deploys happen daily except weekends.", "Deploys happen daily, never on weekends."),
                 ("Interns do not get paid vacation.", "Interns get paid sick leave, but no paid vacation.")]
    assert_verdicts(supported, contradicted)


def assert_verdicts(supported: list[tuple[str, str]], contradicted: list[tuple[str, str]]) -> None:
    """Each (claim, source) pair of `supported` supported and not contradicted, each of `contradicted` contradicted."""
    for claim, source in supported:
        check = support(claim, source)
        assert check.supported and not check.contradicted, claim
    for claim, source in contradicted:
        assert support(claim, source).contradicted, claim
