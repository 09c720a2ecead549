"""Text corpora of the paper: NeurIPS titles (Section 4.5), Reuters headlines (supplement 5.1),
and the PMI topic-coherence metric of Table 5.

``preprocess`` holds the one text pipeline (tokenize, lemmatize, stop words) shared by the
corpora and by the PMI reference corpus, so a topic's words and the reference counts are
produced by identical code.
"""
