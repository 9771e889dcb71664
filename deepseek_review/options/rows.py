"""The option table's rows: every option once, with its type, default, scopes, checks and help.

Add an option here (one row) and run ``scripts/option_schemas.py``, ``scripts/option_docs.py``
and ``scripts/cli_reference.py``; everything else is derived (:mod:`deepseek_review.options.table`).
"""

from __future__ import annotations

from typing import Any

from deepseek_review.options.option import COMMANDS, CONFIG_FILE, DEFAULTS, ENTRY, ENV, Option
from deepseek_review.options.values import AtLeast, Between, Matches, NotBlank, OneOf, Positive

#: Per-server fields that make a server continue the final assistant message (prefill):
#: (body fields, fields of the prefilled message). Ollama and llama.cpp need none.
SERVER_PRESETS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "ollama": ({}, {}),
    "llama.cpp": ({}, {}),
    "vllm": ({"continue_final_message": True, "add_generation_prompt": False}, {}),
    "deepseek": ({}, {"prefix": True}),
}
CONTINUATION_STYLES = ("prefill", "directive")
REASONING_LEVELS = ("none", "low", "medium", "high", "max")
CHAT_APIS = ("openai", "ollama")
#: The bundled templates (``prompts/*.md``; a test keeps this equal to the folder): what
#: ``--template``'s help and completion offer. The ones the tool sends itself (the findings
#: extraction, the self-check) are in ``prompts/internal/``, not offered.
TEMPLATES = ("default", "spec-review", "code-review", "diff-review", "synthesis")
FINDINGS_FROM = ("auto", "structured", "block")
TOPIC_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,119}"


# --------------------------------------------------------------------------- the table

_ALL = frozenset(COMMANDS)
_REVIEW = frozenset({"run", "batch", ENTRY, DEFAULTS})
_SETTING = frozenset({CONFIG_FILE, ENV})
_CONT = frozenset({"continue"})
_SECRET = "a file under review must not choose which secret is sent"


TABLE: tuple[Option, ...] = (
    Option("path", "str", None, "A receipt or answer file of the chain",
           frozenset({"continue", "show"}), argument=True),
    Option("manifest", "path", None, "The manifest: reviews.toml, or JSON Lines (.jsonl/.ndjson)",
           frozenset({"batch"}), argument=True),
    Option("jobs", "int", 4,
           "Reviews sent at the same time (run --split: parts, given on the command line; "
           "else one at a time)", frozenset({"batch", "run"}) | _SETTING, short="-j",
           check=AtLeast(1)),
    Option("jobs_per_endpoint", "int", None,
           "Requests each server of a pool (--endpoint given more than once) gets at once; "
           "one that answers 429 or 503 is given fewer", frozenset({"batch", "run"}) | _SETTING,
           default_text="--jobs spread evenly over the servers", check=AtLeast(1)),
    Option("shard", "str", None,
           "K/N: run only shard K (0-based) of N, split by a hash of the topic",
           frozenset({"batch"})),
    Option("format", "str", None, "Manifest format: toml or jsonl", frozenset({"batch"}),
           default_text="from the file's extension", check=OneOf(("toml", "jsonl"))),
    Option("report", "path", None, "Write the JSON report to this file (replaced if there)",
           frozenset({"batch"})),
    Option("fail_fast", "bool", False, "Start no new review after the first failure",
           frozenset({"batch"}), negatable=False),
    Option("max_total_tokens", "int", None,
           "Start no new review once this run's receipts used this many tokens (run --split: "
           "refuse a plan that may use more, before anything is sent)",
           frozenset({"batch", "run"}), check=Positive()),
    Option("max_cost", "float", None,
           "At the operator's prices (DEEPSEEK_REVIEW_PRICES): batch starts no new review once "
           "its answers cost this much; run refuses, before sending, a review whose worst case "
           "costs more", frozenset({"batch", "run"}), check=Positive()),
    Option("resume", "bool", True, "Adopt what earlier runs left; --no-resume redoes every entry",
           frozenset({"batch"})),
    Option("trusted_rev", "str", None,
           "Believe review files that a commit brought only if committed unchanged in this git "
           "revision (in CI on a pull request: the base branch); see the trust model",
           frozenset({"batch", "run", "continue", "show", ENV}), aliases=("--resume-from",),
           refusal="a file under review must not choose which revision is trusted"),
    Option("context", "paths", (),
           "A file (path#L120-L260: those lines), folder or glob in the repository (repeatable)",
           frozenset({"run", ENTRY, DEFAULTS}), short="-c", review=True, under_root=True),
    Option("exclude", "paths", (),
           "Leave out what a folder or glob lists that matches this git pathspec "
           "(repeatable; a folder, or wildcards matching across /)",
           frozenset({"run", ENTRY, DEFAULTS}), review=True, under_root=True),
    Option("prompt", "str", None, "The review request", frozenset({"run", ENTRY}), short="-p",
           review=True),
    Option("prompt_file", "path", None,
           "Read the review request from a file (in a manifest: relative to its folder)",
           frozenset({"run", ENTRY}), review=True),
    Option("topic", "str", "review", "Names the output files: <topic>_deepseek_<model>_<stamp>",
           frozenset({"run", ENTRY}), review=True,
           check=Matches(TOPIC_PATTERN, "use letters, digits, '.', '_' or '-' (at most 120), "
                         "starting with a letter or digit")),
    Option("model", "str", "deepseek-v4-flash", "Model name as the server knows it",
           _REVIEW | _SETTING, check=NotBlank(), review=True),
    Option("endpoint", "str", None,
           "Chat-completions URL or base URL (batch, run --split: repeat it, or set "
           "DEEPSEEK_REVIEW_ENDPOINTS, to spread the reviews over several servers)",
           _REVIEW | _SETTING | _CONT,
           default_text="OLLAMA_HOST, else localhost:11434; continue: the receipt's",
           review=True, origin_matters=True, repeats=frozenset({"batch", "run"})),
    Option("api_key_env", "str", None, "Environment variable holding the API key",
           frozenset({"run", "continue", "batch", ENV}),
           default_text="OLLAMA_API_KEY, sent over https only", review=True, refusal=_SECRET),
    Option("repo_root", "str", None, "Repository root", _ALL,
           default_text="the enclosing git work tree, else ."),
    Option("output_dir", "str", "reviews", "Output folder, inside the repository",
           _REVIEW | _SETTING, default_text="reviews, at the repository root", review=True,
           under_root=True),
    Option("template", "str", "default",
           "Bundled template: default, spec-review, code-review, diff-review or synthesis",
           _REVIEW | _SETTING,
           review=True),
    Option("template_file", "path", None,
           "A template file of your own (in a manifest: relative to its folder)",
           frozenset({"run", ENTRY, DEFAULTS}), review=True),
    Option("temperature", "float", 0.0,
           "Sampling temperature, always sent (Ollama forces 1.0 when absent)",
           _REVIEW | _SETTING, check=Between(0, 2), review=True),
    Option("max_tokens", "int", 8192, "Completion token cap, sent as max_tokens",
           _REVIEW | _SETTING, check=Positive(), review=True),
    Option("stream", "bool", True, "Stream the answer (SSE)", _REVIEW | _SETTING | _CONT,
           review=True),
    Option("extra_body", "json", {},
           "Extra JSON body fields, e.g. '{\"reasoning_effort\":\"none\"}'", _REVIEW,
           review=True),
    Option("max_file_bytes", "int", 200_000, "Refuse a context file larger than this",
           _REVIEW | _SETTING, check=Positive(), review=True),
    Option("max_context_bytes", "int", 400_000, "Refuse a larger context in total",
           _REVIEW | _SETTING, check=Positive(), review=True),
    Option("keep_reasoning", "bool", False, "Write the model's reasoning to <stem>.reasoning.md",
           _REVIEW | _CONT, review=True),
    Option("findings", "bool", False,
           "Write the review's findings to <stem>.findings.json beside the last segment, or "
           "beside its findings extraction (--findings-from; a template that asks for "
           "findings: code-review, spec-review)",
           _REVIEW | _SETTING | _CONT, review=True),
    Option("findings_from", "str", "auto",
           "Where --findings come from: structured (a second request, receipted, asking for "
           "them as JSON in the server's structured-output dialect), block (the answer's "
           "```json block), or auto (structured where the server constrains output to a "
           "schema, falling back to the block)", _REVIEW | _SETTING | _CONT,
           check=OneOf(FINDINGS_FROM), review=True),
    Option("self_check", "bool", False,
           "With --findings: one more request scores each finding 0-10 against the code it "
           "quotes; those under --self-check-threshold are dropped (kept, with every score, "
           "in the findings file)", _REVIEW | _SETTING | _CONT, review=True),
    Option("self_check_threshold", "int", 5,
           "The score (0-10) a finding needs to stay with --self-check",
           _REVIEW | _SETTING | _CONT, check=Between(0, 10), review=True),
    Option("max_continuations", "int", 3, "Continuation requests when cut off; 0 disables",
           _REVIEW | _SETTING | _CONT, check=AtLeast(0), review=True),
    Option("continuation_style", "str", "prefill",
           "prefill (assistant prefill, exact seam) or directive (a user message)",
           _REVIEW | _SETTING | _CONT, check=OneOf(CONTINUATION_STYLES), review=True),
    Option("continuation_model", "str", None, "Model for continuations",
           _REVIEW | _SETTING | _CONT, default_text="the review's", review=True),
    Option("continuation_max_tokens", "int", None, "Token cap for continuations",
           _REVIEW | _SETTING | _CONT, default_text="the review's", check=Positive(),
           review=True),
    Option("max_run_tokens", "int", None,
           "Refuse, before anything is sent, a run that could use more tokens than this "
           "(each prompt re-sent with every continuation allowed, every answer at its cap)",
           frozenset({"run", "continue", "batch", ENV}), check=Positive(), review=True,
           refusal="a file under review must not raise the operator's token cap"),
    Option("server", "str", "ollama",
           "Server kind, for the fields that make it continue a prefill: "
           + ", ".join(SERVER_PRESETS), _REVIEW | _SETTING | _CONT,
           check=OneOf(tuple(SERVER_PRESETS)), review=True),
    Option("api", "str", "openai",
           "openai (/v1/chat/completions) or ollama (Ollama's /api/chat, with num_ctx sized "
           "to the request)", _REVIEW | _SETTING, check=OneOf(CHAT_APIS), review=True),
    Option("prices", "json", {},
           "Prices per million tokens by model (or model@host), for stats: "
           "{\"deepseek-v4-flash\": {\"input\": 0.14, \"cache_hit\": 0.028, \"output\": 0.28}}",
           _SETTING, origin_matters=True),
    Option("reasoning", "str", None,
           "Reasoning: none, low, medium, high or max, sent as the --server kind reads it",
           _REVIEW | _SETTING, default_text="the model's", check=OneOf(REASONING_LEVELS),
           review=True),
    Option("continuation_extra_body", "json", {},
           "Extra JSON body fields for continuation requests only", _REVIEW | _CONT, review=True),
    Option("context_window", "int", None, "The model's context window; warn before sending more",
           _REVIEW | _SETTING, check=Positive(), review=True),
    Option("split", "bool", False,
           "Review a context larger than the model's window in parts that fit, then merge "
           "their answers in one synthesis review (needs --context-window, or an Ollama "
           "server that says it)", _REVIEW | _SETTING,
           review=True),
    Option("allow_truncated_prompt", "bool", False,
           "Keep an answer even if the server silently clipped the prompt", _REVIEW | _CONT,
           review=True),
    Option("allow_secrets", "bool", False,
           "Send context that looks like it holds secrets to a remote endpoint",
           frozenset({"run", "continue", "batch"}), negatable=False, review=True,
           refusal="a file under review must not switch the secret scan off"),
    Option("force", "bool", False, "Continue even if the last segment ended normally", _CONT,
           negatable=False),
    Option("max_attempts", "int", 5, "Attempts per request, retries included",
           frozenset({"run", "continue", "batch"}) | _SETTING, check=AtLeast(1)),
    Option("retry_wait", "float", 1.0,
           "First backoff in seconds; doubles per retry (with jitter), up to 30",
           frozenset({"run", "continue", "batch"}), check=AtLeast(0, "seconds")),
    Option("connect_timeout", "float", 10.0, "Seconds to connect",
           frozenset({"run", "continue", "batch"}) | _SETTING, check=Positive("seconds")),
    Option("read_timeout", "float", 600.0, "Seconds to wait for the next bytes",
           frozenset({"run", "continue", "batch"}) | _SETTING, check=Positive("seconds")),
    Option("total_timeout", "float", 1800.0, "Seconds one attempt may take in all, retries apart",
           frozenset({"run", "continue", "batch"}) | _SETTING, check=Positive("seconds")),
    Option("sign", "bool", False,
           "Sign each segment: an in-toto statement and its SSH signature beside the receipt",
           frozenset({"run", "batch", "continue"}) | _SETTING, cli_only=True),
    Option("signing_key", "str", None,
           "SSH key that signs: a private key file, or a .pub key whose private half ssh-agent "
           "holds", frozenset({"run", "batch", "continue", ENV}), cli_only=True,
           default_text="git's user.signingkey when gpg.format is ssh",
           refusal="a file under review must not choose which of your keys signs"),
    Option("allowed_signers", "str", None,
           "Who may sign reviews: an allowed-signers file in git's format",
           frozenset({"verify", "run", "continue", "show", ENV}), cli_only=True,
           default_text="git's gpg.ssh.allowedSignersFile",
           refusal="a file under review must not choose whose signatures are believed"),
    Option("require_signature", "bool", False,
           "An unsigned segment fails (default: a warning once allowed signers are given)",
           frozenset({"verify"}) | _SETTING, cli_only=True, negatable=False),
    Option("diff", "str", None,
           "Review a change: A..B (commit A to B), A...B (from their merge base), or A "
           "(meaning A...HEAD, a pull request)", frozenset({"run", ENTRY}), review=True),
    Option("staged", "bool", False, "Review the staged change (the index against HEAD)",
           frozenset({"run"}), negatable=False, review=True,
           refusal="a batch reviews commits, not what is staged at the moment"),
    Option("rev", "str", None,
           "Read the context files from this commit's blobs, not the working tree",
           frozenset({"run", ENTRY}), review=True),
    Option("since_last_review", "bool", False,
           "With a diff: review only what changed since the commit the newest review of the "
           "same topic pinned", frozenset({"run", ENTRY}), negatable=False, review=True),
    Option("diff_context", "int", 3, "Lines of context around each change of the diff",
           _REVIEW | _SETTING, check=AtLeast(0), review=True),
    Option("function_context", "bool", False,
           "Show the whole function around each change of the diff", _REVIEW | _SETTING,
           review=True),
    Option("whole_files", "bool", False, "Add the new version of every changed file, whole",
           _REVIEW, review=True),
    Option("renames", "bool", True, "Detect renamed files in the diff", _REVIEW | _SETTING,
           review=True),
    Option("include_lock_files", "bool", False, "Keep lock files in the diff", _REVIEW,
           review=True),
    Option("include_generated", "bool", False,
           "Keep files marked linguist-generated in the diff", _REVIEW, review=True),
    Option("include_binary", "bool", False,
           "Keep binary files in the diff (as git shows them: one line)", _REVIEW, review=True),
    Option("dry_run", "bool", False,
           "Check and plan everything and show what would be sent; send and write nothing",
           frozenset({"run", "batch"}), negatable=False, cli_only=True),
)  # fmt: skip
