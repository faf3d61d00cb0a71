.PHONY: setup dev run test unit lint format openapi openapi-check guide validate build deploy

setup:
	bash scripts/setup.sh

dev run:
	bash scripts/run.sh

test:
	bash scripts/test.sh

unit:
	.venv/bin/python -m pytest tests/unit

lint:
	.venv/bin/ruff check . && .venv/bin/ruff format --check .

format:
	.venv/bin/ruff format . && .venv/bin/ruff check --fix .

openapi:
	PYTHONPATH=shared:. .venv/bin/python -m infra.openapi --write

guide:  # the served copies of the agent guide and the docs it links (GET /api/guide, /api/docs/<name>; package data, so they ship in the Lambda layer)
	cp docs/agent-integration.md shared/agentmate/system/agent-integration.md
	cp docs/context-pack.md docs/knowledge-wiki.md docs/decisions.md docs/agent-bootstrap.md shared/agentmate/system/docs/

openapi-check:
	PYTHONPATH=shared:. .venv/bin/python -m infra.openapi --check

validate:
	bash scripts/sam-validate.sh

build:
	bash scripts/build-layer.sh

deploy: build
	.tools-venv/bin/sam deploy --guided
