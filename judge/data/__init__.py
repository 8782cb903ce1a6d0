"""What judge ships besides code: where its built-in prompts are (`judge.data.builtin`)."""
