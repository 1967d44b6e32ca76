"""LLM hard negatives on top of ``vlcomp.llm``: SugarCrepe-style REPLACE / SWAP / ADD pairs
(``sugarcrepe``), CREPE productivity captions for n >= 5 (``productivity``), validation of
every output with our parser (``validate``), the prompt files (``prompts``), the job
functions (``jobs``) and the stage-2 human review sheet (``review``)."""
