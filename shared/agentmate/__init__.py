"""Agentmate: a multi-tenant backend as toolset for AI agents."""
