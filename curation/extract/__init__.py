"""Main-content extraction from web pages: the engines (`trafilatura`, `fast`), the page helpers the page
stages share (`html`: decoding, the attribute guard, which rows are pages) and the per-page time limit.
The `extract` stage (`curation.stages.extract`) runs them over a batch."""
