"""A LlamaIndex RAG pipeline with the citation guard, offline: `python examples/llamaindex_query_engine.py`.

The index was "built last month" from a few web pages; since then one page died and one changed.
The example serves those pages itself on 127.0.0.1 (guardrail.apps.demo), so it needs no network and
no API key. The LLM is a tiny deterministic stand-in that answers the way CitationQueryEngine asks
(one sentence per numbered source, with its [n] marker: the package's test double
CitingLLM); the embedding model is MockEmbedding.

1. CitationGuardQueryEngine verifies the answer: every [n] is resolved to the response's
   source_nodes[n - 1], whose page is re-fetched (or whose text is checked, when it has no URL).
2. CitationGuardPostprocessor re-checks the retrieved nodes against their live pages before the
   LLM sees them, and drops the dead and the contradicted ones.

Verdicts come from the embedded judge model when it is installed, else from the judge named by
GUARDRAIL_JUDGE (openai / anthropic / ollama); without either, dead links are still caught but
nothing else can be judged.
"""

from __future__ import annotations

import sys

from llama_index.core import Document, VectorStoreIndex
from llama_index.core import Settings as LlamaSettings
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.query_engine import CitationQueryEngine

from guardrail import Policy
from guardrail.apps.demo import LoopbackSite, demo_routes, demo_verifier, describe_judge, note_if_no_judge, print_report
from llama_index.postprocessor.citation_guardrail import CitationGuardPostprocessor, CitationGuardQueryEngine, report_of
from llama_index.postprocessor.citation_guardrail.testing import CitingLLM


def documents(site: LoopbackSite) -> list[Document]:
    """What the index holds: chunks written from the pages when they were crawled."""
    return [
        Document(
            text="At sea level, pure water boils at 100 degrees Celsius (212 degrees Fahrenheit).",
            metadata={"url": site.url("/boiling"), "title": "The boiling point of water"},
        ),
        Document(
            text="In Denver, about 1,600 metres above sea level, water boils at roughly 95 degrees Celsius.",
            metadata={"url": site.url("/boiling"), "title": "The boiling point of water"},
        ),
        Document(
            # When crawled, the report said 0 degrees; the page now says 10.
            text="The author found that ice melts at 0 degrees Celsius.",
            metadata={"url": site.url("/old-report"), "title": "An old report on water"},
        ),
        Document(
            text="Titanic was directed by James Cameron and released in December 1997.",
            metadata={"url": site.url("/titanic"), "title": "Titanic (1997 film)"},
        ),
        Document(
            # This page has since been taken down (the demo site answers 404).
            text="The director's cut of Titanic runs for over four hours.",
            metadata={"url": site.url("/titanic-directors-cut"), "title": "Titanic: the director's cut"},
        ),
        Document(
            # An internal note with no URL: the guard checks the answer against its text instead.
            text="Our lab kettle is descaled every Friday afternoon.",
            metadata={"file_name": "lab-notes.md"},
        ),
    ]


def main() -> None:
    LlamaSettings.llm = CitingLLM()
    LlamaSettings.embed_model = MockEmbedding(embed_dim=16)

    with LoopbackSite(demo_routes()) as site:
        # Only the demo's own origin gets through the SSRF guard, not loopback in general.
        verifier = demo_verifier(site)
        note_if_no_judge(verifier)
        index = VectorStoreIndex.from_documents(documents(site))

        # 1. Guard the answer of a CitationQueryEngine.
        engine = CitationQueryEngine.from_args(index, similarity_top_k=10)
        guarded_engine = CitationGuardQueryEngine(engine, verifier, policy=Policy.preset("annotate"))
        print("Verifying the answer's citations (the first run loads the embedded models)...\n", file=sys.stderr)
        response = guarded_engine.query("What do we know about boiling water, ice and Titanic?")
        report = report_of(response)
        assert report is not None
        print("== the model's answer ==")
        print(report.answer)
        print("\n== guarded answer (policy: annotate) ==")
        print(response)
        print("\n== report ==")
        print_report(report, site)
        print(f"judge: {describe_judge(verifier.judge)}")

        # 2. Re-check the retrieved nodes before the LLM sees them (drops unreachable and contradicted).
        post = CitationGuardPostprocessor(verifier)
        nodes = index.as_retriever(similarity_top_k=10).retrieve("water")
        kept = {n.node.node_id: n for n in post.postprocess_nodes(nodes)}
        print(f"\n== postprocessor: {len(kept)} of {len(nodes)} retrieved nodes kept ==")
        for item in nodes:
            md = item.node.metadata
            where = str(md.get("url", md.get("file_name", ""))).replace(site.base, "")
            if item.node.node_id not in kept:
                print(f"dropped {where:<24} (its page is gone or now contradicts it)")
            elif "citation_verdict" not in kept[item.node.node_id].node.metadata:
                print(f"kept    {where:<24} (no URL: passed through unchecked)")
            else:
                verdict = kept[item.node.node_id].node.metadata
                print(f"kept    {where:<24} {verdict['citation_verdict']} ({verdict['citation_support']} sentences)")


if __name__ == "__main__":
    main()
