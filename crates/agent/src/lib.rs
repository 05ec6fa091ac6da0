//! The LLM agent: reconciles what no recipe covers, with tools over state, HCL and the knowledge base
