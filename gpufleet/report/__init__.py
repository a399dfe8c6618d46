"""Plan reports for CI: Markdown for pull requests, SARIF 2.1.0 for code scanning.

Renderers are functions over plan JSON documents (`PlanResult.to_json()`) and stack outcomes; the CLI only
chooses one and prints what it returns."""
