"""Tree-of-Experience (seed 002): the tree, its induction, the LLM judge and rewrite, the prior and its lake
storage, the toe variants' daily step, and the experience task."""
