"""aviPAM paper: Tables 1-4, the collapse study (Figs. 2-3) and the claims."""
