"""Languages beyond English: word segmentation by language (`words`), filter settings by language
(`settings`, shipped in `data/`), and the script of a text or a language code (`scripts`)."""
