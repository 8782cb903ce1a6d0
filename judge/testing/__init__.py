"""Test helpers shipped with judge: a local fake OpenAI/Anthropic server and canned verdicts,
so users can check their setup without an API key. The server needs the `testing` extra
(`pip install 'judge[testing]'`); the canned verdicts need nothing."""
