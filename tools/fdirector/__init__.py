"""The function director (FD) of paper 003: drives a serverless function with a bounded number
of active requests, retries failed requests until they succeed and saves raw timings."""
