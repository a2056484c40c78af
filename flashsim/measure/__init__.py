"""Result records, summaries and plots."""
