"""Topic models shared by the APE and aviPAM papers (logistic-normal and Pachinko allocation)."""
