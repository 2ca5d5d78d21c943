"""A claim that repeats its source with one name put in place of another is not supported, wherever the name
stands; a name left out, respelled or described in plain words, and a faithful paraphrase, still are."""

from __future__ import annotations

from assistant.answers.name_swaps import moved_number, swapped_name, swapped_number, written_as_names
from assistant.answers.support import key_units, support

BADGES = "# Badges\n\nGSA processes new badges every Wednesday at the Washington DC office.\nBring two forms of ID."


def test_a_name_first_in_its_sentence_swapped_for_another_is_not_supported() -> None:
    assert support("GSA processes new badges every Wednesday [1].", BADGES).supported
    swapped = support("Pay processes new badges every Wednesday [1].", BADGES)
    assert not swapped.supported and not swapped.contradicted


def test_a_name_inside_the_sentence_swapped_is_caught_whatever_the_words() -> None:
    source = "Separated employees retain access to Employee Express for 3 years."
    assert swapped_name("Separated employees retain access to Travel Express for 3 years.", source)
    assert swapped_name("Separated employees retain access to Concur for 3 years.", source)
    assert not swapped_name("Separated employees keep access to Employee Express for 3 years.", source)


def test_one_mention_of_a_repeated_name_swapped_is_a_swap() -> None:
    source = "TTS management and TTS procurement analysts review the packages."
    assert swapped_name("Account management and TTS procurement analysts review the packages.", source)


def test_a_name_left_out_respelled_or_described_in_plain_words_is_no_swap() -> None:
    assert support("Staff members can join the channel.", "TTS staff members can join the channel.").supported
    assert not swapped_name("Hrlinks shows your leave balance.", "HR Links shows your leave balance.")
    # A lower-case description is less precise than the name, not another name.
    assert support("Contact the help desk to reset your password.",
                   "Contact the GSA IT Service Desk to reset your password.").supported


def test_numbers_and_chinese_claims_are_left_to_their_own_tests() -> None:
    assert not swapped_name("New employees get 15 vacation days.", "New employees get 13 vacation days.")
    assert not swapped_name("Pay 每周三处理新的工牌。", "GSA 每周三处理新的工牌。")


def test_names_are_told_by_how_they_are_written() -> None:
    assert written_as_names("Pay the fee in Concur using form sf_182 or SF-182") == {"pay", "concur", "sf_182", "sf", "182"}


def test_a_hyphenated_name_is_keyed_by_its_named_parts() -> None:
    assert key_units("Log your hours with Tock-specific codes") == {"tock"}
    assert key_units("Submit the SF-182 before the course") == {"sf", "182"}
    assert key_units("It uses built-in tools") == frozenset()
    # So another form number, or another name before the hyphen, is not the source's.
    assert not support("Submit the SF-364 before the course.", "Submit the SF-182 before the course.").supported
    assert not support("Log your hours with Slack-specific codes.", "Log your hours with Tock-specific codes.").supported


def test_a_number_put_in_place_of_another_that_the_sentence_states_elsewhere_is_a_contradiction() -> None:
    """The key-unit test finds both numbers in the window; the alignment sees which one took whose place."""
    review = "调薪和晋升在每年 1 月根据全年两次考核的结果决定。"
    assert swapped_number("调薪和晋升在每年 2 月根据全年两次考核的结果决定。", review)
    flipped = support("调薪和晋升在每年 2 月根据全年两次考核的结果决定。", review)
    assert flipped.contradicted and not flipped.supported
    load = "并发 16 时单实例吞吐约 610 tokens/s，并发 32 时约 890 tokens/s，再往上提升不明显。"
    assert not support("并发 32 时单实例吞吐约 610 tokens/s，并发 32 时约 890 tokens/s。", load).supported
    fixed = "10:20 把 NCCL_IB_HCA 改成按前缀匹配的 mlx5，重新拉起实例后服务在 10:28 恢复。"
    assert not support("20:20 把 NCCL_IB_HCA 改成按前缀匹配的 mlx5，重新拉起实例后服务在 10:28 恢复。", fixed).supported
    staff = "Each office has 3 printers and 12 desks for visiting staff."
    assert swapped_number("Each office has 12 printers and 12 desks for visiting staff.", staff)


def test_numbers_said_again_reordered_or_as_words_are_no_swap() -> None:
    staff = "Each office has 3 printers and 12 desks for visiting staff."
    assert not swapped_number("Each office has 12 desks and 3 printers for visiting staff.", staff)
    assert not swapped_number("Each office has three printers and twelve desks for visiting staff.", staff)
    assert support("Each office has three printers and twelve desks [1].", staff).supported
    assert support("调薪和晋升在每年 1 月决定，根据全年两次考核的结果。", "调薪和晋升在每年 1 月根据全年两次考核的结果决定。").supported


def test_a_number_of_the_source_said_with_the_words_of_another_of_its_numbers_is_a_contradiction() -> None:
    # Every number of the claim is in the source, so the key-unit test passes it; the words it comes with are
    # another number's.
    source = "RTO 不超过 4 小时，RPO 不超过 1 小时。"
    assert moved_number("RPO 是 4 小时。", source) and not moved_number("RTO 是 4 小时。", source)
    # A name tells what a number is of before the other words do.
    assert not moved_number("RTO 目标是 4 小时。", "目标是 RPO 不超过 24 小时，RTO 不超过 4 小时。")
    bench = "并发 16 时单实例吞吐约 610 tokens/s。整机 4 个实例合计吞吐约 3,400 tokens/s。"
    assert moved_number("单实例吞吐大概能到 3,400 tokens/s。", bench)
    assert not moved_number("整机合计吞吐约 3,400 tokens/s。", bench)
    leave = "Full-time employees get 13 vacation days and 10 sick days per year."
    moved = support("Employees get 10 vacation days [1].", leave)
    assert not moved.supported and moved.contradicted
    assert support("Employees get 10 sick days a year [1].", leave).supported
    assert support("Employees get 13 vacation days and 10 sick days [1].", leave).supported


def test_a_number_is_read_with_the_clauses_of_its_sentence_that_say_what_it_is() -> None:
    """"输入 1024 token、输出 256 token，作为标准档位": the clause after the numbers says they are the standard tier's,
    so "标准档的输入长度定为 1024 token" states them with their own words, not with those of the long-context tier's
    8192 (whose clause shares "档" and "输入" with it)."""
    method = ("数据集与请求长度\n\n默认数据集是内部整理的 ShareGPT 中文子集，共 5,000 条对话。 固定长度测试时，输入 1024 token、输出 256 "
              "token，作为标准档位。 长上下文档位是输入 8192 token、输出 512 token。")
    assert not moved_number("标准档的输入长度定为 1024 token、输出长度定为 256 token。", method)
    assert support("标准档的输入长度定为 1024 token、输出长度定为 256 token。", method).supported
    assert moved_number("标准档的输入长度定为 8192 token、输出长度定为 512 token。", method), "the long tier's numbers"
